// The etcd3 npm client against a real 3-member etcd 3.4 cluster: the reference behaviour.
import { etcd3Suite } from './etcd3-suite.js';

etcd3Suite('etcd');

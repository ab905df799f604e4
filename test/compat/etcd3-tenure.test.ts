// The etcd3 npm client against a 3-member tenure cluster: the same suite as against etcd.
import { etcd3Suite } from './etcd3-suite.js';

etcd3Suite('tenure');

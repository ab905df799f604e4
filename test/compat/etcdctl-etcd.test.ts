// etcdctl 3.4 against a real 3-member etcd 3.4 cluster: the reference behaviour tenure must match.
import { etcdctlSuite } from './etcdctl-suite.js';

etcdctlSuite('etcd');

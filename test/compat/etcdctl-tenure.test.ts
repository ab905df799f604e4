// etcdctl 3.4 against a 3-member tenure cluster: the same suite as against etcd.
import { etcdctlSuite } from './etcdctl-suite.js';

etcdctlSuite('tenure');

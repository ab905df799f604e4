// The etcd3 npm client with Auth against a 3-member tenure cluster.
import { etcd3AuthSuite } from './etcd3-auth-suite.js';

etcd3AuthSuite('tenure');

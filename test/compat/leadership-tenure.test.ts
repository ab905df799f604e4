// Leadership and membership changes through etcdctl 3.4 against a 3-member tenure cluster.
import { leadershipSuite } from './leadership-suite.js';

leadershipSuite('tenure');

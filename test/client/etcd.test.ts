// The SDK contract suite (contract.ts) against a 3-member etcd 3.4 cluster.
import { clientContract } from './contract.js';

clientContract('etcd');

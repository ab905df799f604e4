// Stuck holders (stuck-contract.ts) against a 3-member etcd 3.4 cluster.
import { stuckContract } from './stuck-contract.js';

stuckContract('etcd');

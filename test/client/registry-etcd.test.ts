// The registry suite (registry-contract.ts) against a 3-member etcd 3.4 cluster.
import { registryContract } from './registry-contract.js';

registryContract('etcd');

// The recipes conformance suite (recipes-contract.ts) against a 3-member etcd 3.4 cluster.
import { recipesContract } from './recipes-contract.js';

recipesContract('etcd');

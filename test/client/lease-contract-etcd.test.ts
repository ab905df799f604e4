// The backend-neutral lock contract (lease-contract.ts) on a 3-member etcd 3.4 cluster.
import { etcdApiFactory } from './lease-contract-etcd-api.js';
import { leaseContract } from './lease-contract.js';

leaseContract(etcdApiFactory('etcd'));

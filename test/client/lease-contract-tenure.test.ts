// The backend-neutral lock contract (lease-contract.ts) on a 3-member tenure cluster (needs an
// up-to-date dist/: bin/tenure runs from there).
import { etcdApiFactory } from './lease-contract-etcd-api.js';
import { leaseContract } from './lease-contract.js';

leaseContract(etcdApiFactory('tenure'));

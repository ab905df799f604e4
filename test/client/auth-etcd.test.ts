// The SDK's TLS and auth contract (auth-contract.ts) against one etcd 3.4 member.
import { authContract } from './auth-contract.js';
import { tlsMemberTarget } from './auth-target.js';

authContract(tlsMemberTarget('etcd'));

// The SDK's TLS and auth contract (auth-contract.ts) against one tenure member.
import { authContract } from './auth-contract.js';
import { tlsMemberTarget } from './auth-target.js';

authContract(tlsMemberTarget('tenure'));

// The recipes conformance suite (recipes-contract.ts) against a 3-member tenure cluster (needs an
// up-to-date dist/: `npx tsc -p tsconfig.json`, since bin/tenure runs from there).
import { recipesContract } from './recipes-contract.js';

recipesContract('tenure');

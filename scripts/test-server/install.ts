/**
 * `npm run test-server:install`: fetches Temporal's time-skipping test server (the Java artifact, with its
 * dependencies) into `.temporal/test-server/lib/` for the soak tier's time-skipping tests. A no-op when the jars are
 * there. Needs Java 17+ and Maven.
 */
import { installTestServer } from '../../infra/test-server/install';

console.log(installTestServer({ log: (l) => console.error(l) }));

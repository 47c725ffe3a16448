// importData() in a process of its own, for the tests that kill an import with SIGKILL or feed
// it stdin (test/cli/import-export.test.ts). Argument: JSON { baseUrl, authorization, ca,
// options, hangAfterAcks? }. Prints one JSON line per acknowledged request ({"acks": n}), then
// {"result": …} or {"error": "…"}. With hangAfterAcks, the process freezes (a synchronous
// wait, requests still in flight) after that many acknowledgements, to be killed there.

import https from 'node:https';
import { importData, type ImportOptions } from '../../src/cli/import.js';

const config = JSON.parse(process.argv[2]) as { baseUrl: string; authorization: string; ca: string; options: ImportOptions; hangAfterAcks?: number };
const agent = new https.Agent({ ca: config.ca, keepAlive: true });
let acks = 0;
try {
  const result = await importData({ baseUrl: config.baseUrl, authorization: config.authorization, agent }, {
    ...config.options,
    onProgress: () => {
      acks++;
      process.stdout.write(`${JSON.stringify({ acks })}\n`);
      if (acks === config.hangAfterAcks) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 60_000);
    },
  });
  process.stdout.write(`${JSON.stringify({ result })}\n`);
} catch (err) {
  process.stdout.write(`${JSON.stringify({ error: (err as Error).message })}\n`);
  process.exitCode = 1;
} finally {
  agent.destroy();
}

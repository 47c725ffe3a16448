// Headless Chromium for the browser tests (Debian's `chromium`, driven by playwright-core).
//
// - Trust: the service's certificate is issued by its own CA. Chromium is started with
//   `--ignore-certificate-errors-spki-list=<hash>`, the SHA-256 of the public key of the
//   certificate the service serves (read over a TLS connection verified against the service's CA),
//   so the browser accepts exactly that key and nothing else.
// - Origin: the service sends no CORS headers, so the test page is served *at the service's
//   origin*: playwright answers the one navigation to https://localhost:<port>/__test_page itself,
//   and every other request goes over the network to the real service.
// - That page is fulfilled by playwright, so Chromium cannot tell it came from this machine, and its
//   Local Network Access checks would block a WebSocket to localhost; a page the service itself
//   served would not be, so the checks are off.

import crypto from 'node:crypto';
import tls from 'node:tls';
import { chromium, type Browser, type Page } from 'playwright-core';
import type { TestService } from '../api/harness.js';

/** Debian's chromium; HISTORIAN_CHROMIUM names another binary. */
export const CHROMIUM = process.env.HISTORIAN_CHROMIUM ?? '/usr/bin/chromium';
const CHROMIUM_FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-features=LocalNetworkAccessChecks'];

/** Base64 SHA-256 of the SubjectPublicKeyInfo of the certificate the service serves, as Chromium's SPKI list wants it. */
function servedKeyHash(port: number, ca: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: '127.0.0.1', port, servername: 'localhost', ca }, () => {
      const cert = new crypto.X509Certificate(socket.getPeerCertificate().raw);
      socket.end();
      resolve(crypto.createHash('sha256').update(cert.publicKey.export({ type: 'spki', format: 'der' })).digest('base64'));
    });
    socket.once('error', reject);
  });
}

/** A browser that trusts exactly the key `svc` serves. */
export async function launchFor(svc: Pick<TestService, 'port' | 'ca'>): Promise<Browser> {
  const spki = await servedKeyHash(svc.port, svc.ca);
  return chromium.launch({ executablePath: CHROMIUM, args: [...CHROMIUM_FLAGS, `--ignore-certificate-errors-spki-list=${spki}`], timeout: 60_000 });
}

/** A fresh page (its own context) showing `html` at the service's origin. */
export async function pageAt(browser: Browser, svc: TestService, html: string): Promise<Page> {
  const url = `${svc.baseUrl}/__test_page`;
  const page = await (await browser.newContext()).newPage();
  await page.route(url, (route) => route.fulfill({ status: 200, contentType: 'text/html; charset=utf-8', body: html }));
  await page.goto(url);
  return page;
}

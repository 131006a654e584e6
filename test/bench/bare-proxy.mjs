// Child process: the floor of `npm run bench`, the least a Node proxy can cost. node:http in front, an undici
// Pool behind, the request body collected, the answer's bytes written back as they come, nothing parsed.
//
// Plain JavaScript run by plain `node` (no tsx loader: it cost nothing per request, but ~25 MB of RSS the floor
// must not carry when the gateway's peak RSS is judged against it). The answer goes through undici's
// `dispatch` handler, not `request()` + `pipeline(up.body, res)`: on this machine kind the pipeline design
// cost 250–380 µs of CPU per request against 120–145 µs for this one (docs/performance.md, "The floor"),
// and a floor that costs twice what it must flatters every ratio measured against it.
import { createServer } from 'node:http';
import { Pool } from 'undici';

const origin = process.argv[2];
// Same upstream connection cap as the gateway's default Agent, so neither is starved differently.
const pool = new Pool(origin, { connections: 256, keepAliveTimeout: 30_000 });

const server = createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
  // content-length passes through so the body goes upstream un-chunked, as a real gateway would send it.
  /** @type {Record<string, string>} */
  const headers = { 'content-type': req.headers['content-type'] ?? 'application/json' };
  if (req.headers['content-length'] !== undefined) headers['content-length'] = req.headers['content-length'];
  if (req.headers.authorization !== undefined) headers.authorization = req.headers.authorization;
  // The body is collected first, as the gateway does (it must read it to route), so the floor is like for like.
  /** @type {Buffer[]} */
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => forward(req, res, headers, chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)));
});

/**
 * @param {import('node:http').IncomingMessage} req
 * @param {import('node:http').ServerResponse} res
 * @param {Record<string, string>} headers
 * @param {Buffer} body
 */
function forward(req, res, headers, body) {
  pool.dispatch(
    { method: /** @type {import('undici').Dispatcher.HttpMethod} */ (req.method), path: /** @type {string} */ (req.url), headers, body },
    {
      onRequestStart(controller) {
        // A client that goes away stops the upstream request too.
        res.once('close', () => {
          if (!res.writableFinished) controller.abort(new Error('client closed'));
        });
      },
      onResponseStart(controller, statusCode, upHeaders) {
        res.writeHead(statusCode, { 'content-type': String(upHeaders['content-type'] ?? '') });
        // Backpressure both ways: a slow client pauses the upstream read, its drain resumes it.
        res.on('drain', () => controller.resume());
      },
      onResponseData(controller, chunk) {
        if (!res.write(chunk)) controller.pause();
      },
      onResponseEnd() {
        res.end();
      },
      onResponseError(_controller, err) {
        if (res.headersSent) res.destroy(err);
        else res.writeHead(502).end();
      },
    },
  );
}

server.listen(0, '127.0.0.1', () => process.send?.({ url: `http://127.0.0.1:${/** @type {import('node:net').AddressInfo} */ (server.address()).port}` }));
process.on('disconnect', () => process.exit(0));

import { describe, expect, test } from 'vitest';
import { parseRedisUrl } from '../../../../plugins/stores/redis/url.js';
import { redisStore } from '../../../../plugins/stores/redis/index.js';

describe('parseRedisUrl: one node, Sentinel, a cluster', () => {
  test.each([
    ['redis://127.0.0.1:6379', { kind: 'single', nodes: [{ host: '127.0.0.1', port: 6379 }], auth: {}, tls: false }],
    ['redis://localhost', { kind: 'single', nodes: [{ host: 'localhost', port: 6379 }], auth: {}, tls: false }],
    ['redis://:s3cret@127.0.0.1:6380/2', { kind: 'single', nodes: [{ host: '127.0.0.1', port: 6380 }], auth: { password: 's3cret' }, tls: false, db: 2 }],
    ['rediss://gw:p%40ss@[::1]:6390', { kind: 'single', nodes: [{ host: '::1', port: 6390 }], auth: { username: 'gw', password: 'p@ss' }, tls: true }],
    ['redis+cluster://127.0.0.1:7000,127.0.0.1:7001', { kind: 'cluster', nodes: [{ host: '127.0.0.1', port: 7000 }, { host: '127.0.0.1', port: 7001 }], auth: {}, tls: false }],
    ['redis+sentinel://127.0.0.1:26379,127.0.0.1/gw-primary', { kind: 'sentinel', nodes: [{ host: '127.0.0.1', port: 26379 }, { host: '127.0.0.1', port: 26379 }], auth: {}, tls: false, name: 'gw-primary' }],
  ])('%s', (url, topology) => {
    expect(parseRedisUrl(url)).toEqual(topology);
  });

  test.each([
    ['http://127.0.0.1:6379', 'scheme'],
    ['redis://127.0.0.1:6379,127.0.0.1:6380', 'names one host'],
    ['redis+sentinel://127.0.0.1:26379', "primary's name"],
    ['redis://127.0.0.1:99999', 'port'],
    ['redis://127.0.0.1/x', 'database number'],
  ])('%s is refused (%s), never quoting a password', (url, what) => {
    expect(() => parseRedisUrl(url)).toThrow(what);
    expect(() => parseRedisUrl(url.replace('//', '//:topsecret@'))).toThrow(expect.objectContaining({ message: expect.not.stringContaining('topsecret') }));
  });

  test('the plugin takes exactly one of url, cluster and sentinels, and no brace in the prefix', () => {
    expect(() => redisStore({ url: 'redis://127.0.0.1', cluster: [{ host: '127.0.0.1', port: 7000 }] })).toThrow('exactly one');
    expect(() => redisStore({ sentinels: [{ host: '127.0.0.1', port: 26379 }] })).toThrow('name');
    expect(() => redisStore({ url: 'redis://127.0.0.1', keyPrefix: 'gw{x}:' })).toThrow('hash tag');
  });
});

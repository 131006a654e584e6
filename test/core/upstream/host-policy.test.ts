import { describe, expect, test } from 'vitest';
import { allowEntryProblem, GatewayError, HostPolicy, isRefusedAddress } from '../../../core/index.js';

// Decisions only: nothing here opens a socket.

describe('refused addresses', () => {
  test.each([
    '127.0.0.1', '127.255.255.254', '10.1.2.3', '172.16.0.1', '172.31.255.255', '192.168.1.1', '100.64.0.1', '100.127.255.255',
    '169.254.169.254', '0.0.0.0', '0.1.2.3', '224.0.0.1', '239.255.255.250', '255.255.255.255', '240.0.0.1',
    '192.0.0.8', '192.0.2.1', '198.51.100.7', '203.0.113.9', '198.18.0.1', '198.19.255.255', '192.88.99.1',
    '::', '::1', '::ffff:127.0.0.1', '::ffff:7f00:1', '::ffff:a00:1', '::ffff:169.254.169.254', '::127.0.0.1', '::ffff:0:7f00:1',
    '64:ff9b::a00:1', '64:ff9b::127.0.0.1', '64:ff9b:1::1', 'fc00::1', 'fd12:3456::1', 'fe80::1', 'febf::1', 'fec0::1',
    'ff02::1', '2001:db8::1', '2001::1', '2002:7f00:1::1', '100::1', '3fff::1',
  ])('%s is refused', (address) => {
    expect(isRefusedAddress(address)).toBe(true);
  });

  test.each(['8.8.8.8', '1.1.1.1', '172.32.0.1', '172.15.255.255', '100.128.0.1', '192.169.0.1', '11.0.0.1', '2606:4700:4700::1111', '2a00:1450::1', '::ffff:8.8.8.8', '64:ff9b::808:808'])(
    '%s is public',
    (address) => {
      expect(isRefusedAddress(address)).toBe(false);
    },
  );

  test('what is not an address is refused', () => {
    expect(isRefusedAddress('fe80::1%eth0')).toBe(true);
    expect(isRefusedAddress('not-an-address')).toBe(true);
  });
});

describe('check(url): up front, before any connection', () => {
  const policy = new HostPolicy();
  const refusal = (url: string): GatewayError => {
    try {
      policy.check(url, 'x-gateway-custom-host');
    } catch (err) {
      expect(err).toBeInstanceOf(GatewayError);
      return err as GatewayError;
    }
    throw new Error(`${url} was not refused`);
  };

  // Odd spellings the URL parser turns into the address they stand for.
  test.each([
    ['http://127.0.0.1:9000/v1', '127.0.0.1:9000'],
    ['http://0x7f.1/v1', '127.0.0.1:80'],
    ['http://2130706433:8080/', '127.0.0.1:8080'],
    ['http://017700000001/', '127.0.0.1:80'],
    ['http://127.1/', '127.0.0.1:80'],
    ['http://0/', '0.0.0.0:80'],
    ['https://[::1]/v1', '[::1]:443'],
    ['http://[::ffff:127.0.0.1]:1/', '[::ffff:7f00:1]:1'],
    ['http://[::127.0.0.1]/', '[::7f00:1]:80'],
    ['http://[::]/', '[::]:80'],
    ['http://169.254.169.254/latest/meta-data/', '169.254.169.254:80'],
    ['http://10.0.0.5:8000/v1', '10.0.0.5:8000'],
    ['http://[fd00::5]:8000/v1', '[fd00::5]:8000'],
    ['http://%31%32%37.0.0.1/', '127.0.0.1:80'],
  ])('%s → 400 host_not_allowed naming %s and how to allow it', (url, where) => {
    const err = refusal(url);
    expect(err.code).toBe('host_not_allowed');
    expect(err.status).toBe(400);
    expect(err.type).toBe('invalid_request_error');
    expect(err.param).toBe('x-gateway-custom-host');
    expect(err.message).toContain(`does not connect to ${where}:`);
    expect(err.message).toContain(`add "${where}"`);
    expect(err.message).toContain('GATEWAY_ALLOW_HOSTS');
  });

  test('public addresses and every host name pass (names are checked on their addresses, at connect time)', () => {
    for (const url of ['https://api.openai.com/v1', 'http://8.8.8.8/', 'https://[2606:4700:4700::1111]/', 'http://rebind.test/', 'http://notlocalhost.test/']) {
      expect(() => policy.check(url)).not.toThrow();
    }
  });

  test('localhost and names under it are loopback by definition: refused up front, unless allowed by name or loopback address', () => {
    for (const url of ['http://localhost:11434/v1', 'http://LOCALHOST./', 'http://api.localhost:8080/']) {
      const err = refusal(url);
      expect(err.code).toBe('host_not_allowed');
      expect(err.message).toMatch(/names a loopback/);
    }
    expect(() => new HostPolicy({ allowHosts: ['localhost:11434'] }).check('http://localhost:11434/v1')).not.toThrow();
    expect(() => new HostPolicy({ allowHosts: ['127.0.0.1:11434'] }).check('http://localhost:11434/v1')).not.toThrow();
    expect(() => new HostPolicy({ allowHosts: ['127.0.0.1:11434'] }).check('http://localhost:9999/v1')).toThrow();
    expect(() => new HostPolicy({ allowPrivateHosts: true }).check('http://localhost/')).not.toThrow();
  });

  test('a passed URL is remembered, a refusal is decided again every time, and the remembered set stays bounded', () => {
    const allowing = new HostPolicy({ allowHosts: ['127.0.0.1:9000'] });
    for (let i = 0; i < 3; i++) {
      expect(() => allowing.check('http://127.0.0.1:9000/v1')).not.toThrow();
      expect(() => allowing.check('http://127.0.0.1:9001/v1', 'p')).toThrow(expect.objectContaining({ code: 'host_not_allowed', param: 'p' }));
    }
    // Far more distinct URLs than the set keeps: each still decided right after the set starts again.
    for (let i = 0; i < 3000; i++) expect(() => allowing.check(`http://127.0.0.1:9000/v${i}`)).not.toThrow();
    expect(() => allowing.check('http://10.0.0.1:9000/v1')).toThrow(expect.objectContaining({ code: 'host_not_allowed' }));
  });

  test('not http(s), or with user info: 400 invalid_request that does not repeat the URL', () => {
    for (const url of ['ftp://files.example/', 'file:///etc/passwd', 'http://user:SECRET@api.example.com/', 'http://', 'not a url']) {
      const err = refusal(url);
      expect(err.code).toBe('invalid_request');
      expect(err.message).not.toContain('SECRET');
    }
  });
});

describe('the allow-list', () => {
  const policy = new HostPolicy({
    allowHosts: ['localhost:11434', 'vllm.lan', '10.0.0.5:8000', '[::1]:8000', '*.internal.example', '192.168.0.0/16', 'fd00::/8', '0x7f.0.0.2', 'LLM.Example.COM:8443'],
  });

  test('a name, with or without a port', () => {
    expect(policy.allowsName('localhost', 11434)).toBe(true);
    expect(policy.allowsName('localhost', 11435)).toBe(false);
    expect(policy.allowsName('vllm.lan', 1)).toBe(true);
    expect(policy.allowsName('vllm.lan.', 8000)).toBe(true);
    expect(policy.allowsName('llm.example.com', 8443)).toBe(true);
    expect(policy.allowsName('llm.example.com', 443)).toBe(false);
    expect(policy.allowsName('other.lan', 80)).toBe(false);
  });

  test('*.domain allows the names under it, not the domain itself', () => {
    expect(policy.allowsName('a.internal.example', 443)).toBe(true);
    expect(policy.allowsName('a.b.internal.example', 80)).toBe(true);
    expect(policy.allowsName('internal.example', 443)).toBe(false);
    expect(policy.allowsName('xinternal.example', 443)).toBe(false);
  });

  test('an address with a port allows that port only, and only for a URL that names the address', () => {
    expect(policy.allowsAddress('10.0.0.5', 8000)).toBe(true);
    expect(policy.allowsAddress('10.0.0.5', 8001)).toBe(false);
    expect(policy.allowsAddress('10.0.0.5')).toBe(false); // a name resolving to it: the port is not known there
    expect(policy.allowsAddress('::ffff:10.0.0.5', 8000)).toBe(true);
    expect(policy.allowsAddress('::1', 8000)).toBe(true);
    expect(policy.allowsAddress('::1', 80)).toBe(false);
    expect(() => policy.check('http://10.0.0.5:8000/v1')).not.toThrow();
    expect(() => policy.check('http://10.0.0.5:8001/v1')).toThrow(/does not connect to 10.0.0.5:8001/);
  });

  test('a range or an address without a port allows every port, by name too', () => {
    expect(policy.allowsAddress('192.168.7.7')).toBe(true);
    expect(policy.allowsAddress('192.168.7.7', 1)).toBe(true);
    expect(policy.allowsAddress('fd12::1')).toBe(true);
    expect(policy.allowsAddress('127.0.0.2')).toBe(true); // 0x7f.0.0.2, as the URL parser reads it
    expect(policy.allowsAddress('127.0.0.1', 11434)).toBe(false); // localhost:11434 allows the name, not the address
    expect(policy.allowsAddress('172.16.0.1')).toBe(false);
  });

  test('allowPrivateHosts allows every address', () => {
    const open = new HostPolicy({ allowPrivateHosts: true });
    expect(open.allowsAll).toBe(true);
    expect(open.allowsAddress('127.0.0.1')).toBe(true);
    expect(() => open.check('http://169.254.169.254/')).not.toThrow();
    expect(() => open.check('ftp://169.254.169.254/')).toThrow(/http or https/);
  });

  test.each([
    ['http://vllm.lan', /is a URL/],
    ['vllm.lan/v1', /range/],
    ['user@vllm.lan', /not a host/],
    ['vllm.lan:0', /port/],
    ['vllm.lan:70000', /port/],
    ['vllm.lan:', /port/],
    ['[::1', /IPv6/],
    ['[::1]x', /after the IPv6/],
    ['*.10.0.0.1', /address/],
    ['10.0.0.0/33', /range/],
    ['fd00::/129', /range/],
    ['a b', /not a host/],
    ['a,b', /not a host/],
    ['', /empty/],
  ])('%j is refused: %s', (entry, problem) => {
    expect(allowEntryProblem(entry)).toMatch(problem);
    expect(() => new HostPolicy({ allowHosts: [entry] })).toThrow(/outbound.allowHosts/);
  });

  test.each(['localhost', 'localhost:11434', '10.0.0.5', '10.0.0.5:8000', '[fd00::5]:8000', 'fd00::5', '*.internal.example', '10.0.0.0/8', 'fd00::/8', 'bücher.example'])('%j is an entry', (entry) => {
    expect(allowEntryProblem(entry)).toBeNull();
  });
});

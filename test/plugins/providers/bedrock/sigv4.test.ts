import { Sha256 } from '@aws-crypto/sha256-js';
import { getSigningKey } from '@smithy/signature-v4';
import { describe, expect, test } from 'vitest';
import { signRequest } from '../../../../plugins/providers/bedrock/sign.js';
import { verifySigV4 } from '../../../mocks/contract/bedrock.js';

/** AWS-published and bedrock.md vectors (shared/providers/bedrock.md §2b "Test vectors"). */
const creds = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' };
const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
const sig = (auth: string) => /Signature=([0-9a-f]{64})$/.exec(auth)![1];

describe('SigV4 (published vectors)', () => {
  test('(A) signing-key derivation, AWS documented example (iam, 20120215)', async () => {
    const key = await getSigningKey(Sha256, creds, '20120215', 'us-east-1', 'iam');
    expect(hex(key)).toBe('f4780e2d9f65fa895f9c67b32ce1baf0b0d8a43505a000a1a9e090d414db404d');
  });

  test('(B) get-vanilla and its signing key', async () => {
    const key = await getSigningKey(Sha256, creds, '20150830', 'us-east-1', 'service');
    expect(hex(key)).toBe('938127b5336810ddb6a5d6af445fcac9e371f9ed418ed386b022aed82901be75');
    const headers = await signRequest({ method: 'GET', url: 'https://example.amazonaws.com/', body: null, credentials: creds, region: 'us-east-1', service: 'service', date: new Date('2015-08-30T12:36:00Z'), applyChecksum: false });
    expect(headers.authorization).toBe(
      'AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31',
    );
    expect(headers['x-amz-date']).toBe('20150830T123600Z');
    expect(headers.host).toBeUndefined();
  });

  test('(B) get-vanilla-query-order-key-case: query sorted by key', async () => {
    const headers = await signRequest({ method: 'GET', url: 'https://example.amazonaws.com/?Param2=value2&Param1=value1', body: null, credentials: creds, region: 'us-east-1', service: 'service', date: new Date('2015-08-30T12:36:00Z'), applyChecksum: false });
    expect(sig(headers.authorization!)).toBe('b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500');
  });

  test('(C) AWS documented IAM example (query, content-type)', async () => {
    const headers = await signRequest({
      method: 'GET',
      url: 'https://iam.amazonaws.com/?Action=ListUsers&Version=2010-05-08',
      headers: { 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' },
      body: null,
      credentials: creds,
      region: 'us-east-1',
      service: 'iam',
      date: new Date('2015-08-30T12:36:00Z'),
      applyChecksum: false,
    });
    const key = await getSigningKey(Sha256, creds, '20150830', 'us-east-1', 'iam');
    expect(hex(key)).toBe('c4afb1cc5771d871763a393e44b703571b55cc28424d1a5e86da6ed3c154a4b9');
    expect(sig(headers.authorization!)).toBe('5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7');
  });

  const converse = {
    method: 'POST',
    url: 'https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-3-haiku-20240307-v1%3A0/converse',
    headers: { 'content-type': 'application/json' },
    body: '{"messages":[{"role":"user","content":[{"text":"Hello"}]}],"inferenceConfig":{"maxTokens":64}}',
    credentials: creds,
    region: 'us-east-1',
    service: 'bedrock',
    date: new Date('2024-01-01T00:00:00Z'),
  };

  test('(D) Bedrock Converse POST: double-encoded model id, payload hash signed', async () => {
    const headers = await signRequest(converse);
    expect(headers['x-amz-content-sha256']).toBe('f5b802cc64a01910fd197a46e9e959f3a5795f7728fa5710fb28f1ec3019f545');
    expect(headers.authorization).toBe(
      'AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20240101/us-east-1/bedrock/aws4_request, SignedHeaders=content-type;host;x-amz-content-sha256;x-amz-date, Signature=2e9fc98bcea566b0e568812090699bd37dcbc74b50f8a9e7dcde7b4e90a235a3',
    );
    const key = await getSigningKey(Sha256, creds, '20240101', 'us-east-1', 'bedrock');
    expect(hex(key)).toBe('21089d499243805272d09b1eadc838ec9bedda1a512030b640901ab384b28a19');
  });

  test('(D) with a session token: x-amz-security-token sent and signed', async () => {
    const headers = await signRequest({ ...converse, credentials: { ...creds, sessionToken: 'EXAMPLESESSIONTOKEN' } });
    expect(headers['x-amz-security-token']).toBe('EXAMPLESESSIONTOKEN');
    expect(headers.authorization).toContain('SignedHeaders=content-type;host;x-amz-content-sha256;x-amz-date;x-amz-security-token,');
    expect(sig(headers.authorization!)).toBe('c77f16793902bd26a082ddfdcd41c692f2891ae093ffbc88a34b3134420734e1');
  });

  test('the mock verifier (an independent implementation) accepts the signer and refuses a changed body', async () => {
    const headers = await signRequest(converse);
    const req = { method: 'POST', url: '/model/anthropic.claude-3-haiku-20240307-v1%3A0/converse', headers: { ...headers, host: 'bedrock-runtime.us-east-1.amazonaws.com', 'content-type': 'application/json' } };
    expect(verifySigV4(req, Buffer.from(converse.body), creds.secretAccessKey).ok).toBe(true);
    expect(verifySigV4(req, Buffer.from(converse.body + ' '), creds.secretAccessKey).ok).toBe(false);
    expect(verifySigV4(req, Buffer.from(converse.body), 'wrong').ok).toBe(false);
  });
});

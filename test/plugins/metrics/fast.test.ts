import client from 'prom-client';
import { expect, test } from 'vitest';
import { FastCounter, FastHistogram } from '../../../plugins/metrics/fast.js';
import { metricValue, parsePrometheus } from '../logs/helpers.js';

test('fast counters and histograms render as prom-client would: cumulative buckets, +Inf, sum, count, escaped labels', async () => {
  const registry = new client.Registry();
  const c = new FastCounter('t_requests_total', 'Requests.', ['route', 'status'], registry);
  const h = new FastHistogram('t_duration_seconds', 'Duration.', ['route'], [0.1, 1], registry);
  c.add(1, 'chat', '200');
  c.add(2, 'chat', '200');
  c.add(1, 'a "quoted"\\route\n', '500');
  h.observe(0.05, 'chat');
  h.observe(0.1, 'chat'); // on a bound: in that bucket (le is inclusive)
  h.observe(0.5, 'chat');
  h.observe(7, 'chat');
  const text = await registry.metrics();
  expect(text).toContain('# TYPE t_requests_total counter');
  expect(text).toContain('# TYPE t_duration_seconds histogram');
  expect(text).toContain('t_requests_total{route="a \\"quoted\\"\\\\route\\n",status="500"} 1');
  const parsed = parsePrometheus(text);
  expect(metricValue(parsed, 't_requests_total', { route: 'chat', status: '200' })).toBe(3);
  expect(metricValue(parsed, 't_duration_seconds_bucket', { route: 'chat', le: '0.1' })).toBe(2);
  expect(metricValue(parsed, 't_duration_seconds_bucket', { route: 'chat', le: '1' })).toBe(3);
  expect(metricValue(parsed, 't_duration_seconds_bucket', { route: 'chat', le: '+Inf' })).toBe(4);
  expect(metricValue(parsed, 't_duration_seconds_count', { route: 'chat' })).toBe(4);
  expect(metricValue(parsed, 't_duration_seconds_sum', { route: 'chat' })).toBeCloseTo(7.65);
});

test('series are told apart by every label value, however the values are spelled', async () => {
  const registry = new client.Registry();
  const c = new FastCounter('t_pairs_total', 'Pairs.', ['a', 'b'], registry);
  c.add(1, 'x\u0000y', 'z');
  c.add(2, 'x', 'y\u0000z');
  c.add(4, 'x', 'y\u0000z');
  const one = new FastCounter('t_one_total', 'One label.', ['a'], registry);
  one.add(3, 'only');
  const parsed = parsePrometheus(await registry.metrics());
  expect(metricValue(parsed, 't_pairs_total', { a: 'x\u0000y', b: 'z' })).toBe(1);
  expect(metricValue(parsed, 't_pairs_total', { a: 'x', b: 'y\u0000z' })).toBe(6);
  expect(metricValue(parsed, 't_one_total', { a: 'only' })).toBe(3);
});

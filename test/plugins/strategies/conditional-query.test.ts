import { describe, expect, test } from 'vitest';
import { compileQuery } from '../../../plugins/strategies/conditional/query.js';

const data = {
  metadata: { plan: 'pro', tier: 3, tags: ['beta', 'eu'], user: { id: 'u1' } },
  params: { model: 'gpt-4o-mini', temperature: 0.7, stream: true },
};
const match = (q: unknown) => compileQuery(q, 'q')(data);

describe('operators', () => {
  test.each([
    ['plain value is $eq', { 'metadata.plan': 'pro' }, true],
    ['$eq', { 'params.model': { $eq: 'gpt-4o-mini' } }, true],
    ['$eq miss', { 'params.model': { $eq: 'gpt-4o' } }, false],
    ['$ne', { 'metadata.plan': { $ne: 'free' } }, true],
    ['$in', { 'metadata.plan': { $in: ['pro', 'team'] } }, true],
    ['$in miss', { 'metadata.plan': { $in: ['free'] } }, false],
    ['$nin', { 'metadata.plan': { $nin: ['free'] } }, true],
    ['$gt', { 'metadata.tier': { $gt: 2 } }, true],
    ['$gt equal is false', { 'metadata.tier': { $gt: 3 } }, false],
    ['$gte', { 'metadata.tier': { $gte: 3 } }, true],
    ['$lt', { 'params.temperature': { $lt: 1 } }, true],
    ['$lte', { 'params.temperature': { $lte: 0.7 } }, true],
    ['$gt on a string field compares strings only', { 'params.model': { $gt: 5 } }, false],
    ['$regex', { 'params.model': { $regex: '^gpt-4o' } }, true],
    ['$regex miss', { 'params.model': { $regex: '^claude' } }, false],
    ['$exists true', { 'metadata.user.id': { $exists: true } }, true],
    ['$exists false', { 'metadata.missing': { $exists: false } }, true],
    ['nested path', { 'metadata.user.id': 'u1' }, true],
    ['array field contains', { 'metadata.tags': 'eu' }, true],
    ['range on one field', { 'metadata.tier': { $gt: 1, $lt: 5 } }, true],
    ['$and', { $and: [{ 'metadata.plan': 'pro' }, { 'params.stream': true }] }, true],
    ['$and miss', { $and: [{ 'metadata.plan': 'pro' }, { 'params.stream': false }] }, false],
    ['$or', { $or: [{ 'metadata.plan': 'free' }, { 'metadata.tier': 3 }] }, true],
    ['$or miss', { $or: [{ 'metadata.plan': 'free' }, { 'metadata.tier': 4 }] }, false],
    ['several fields are and-ed', { 'metadata.plan': 'pro', 'params.model': 'x' }, false],
    ['empty query matches', {}, true],
    ['an object value is compared whole', { 'metadata.user': { id: 'u1' } }, true],
  ])('%s', (_name, query, expected) => {
    expect(match(query)).toBe(expected);
  });
});

describe('bad queries are 400s naming the path', () => {
  test.each([
    [{ 'metadata.plan': { $like: 'x' } }, 'q.metadata.plan.$like'],
    [{ $nor: [] }, 'q.$nor'],
    [{ $or: [] }, 'q.$or'],
    [{ 'metadata.tier': { $in: 3 } }, 'q.metadata.tier.$in'],
    [{ 'metadata.tier': { $regex: '(' } }, 'q.metadata.tier.$regex'],
    [{ 'metadata.tier': { $exists: 'yes' } }, 'q.metadata.tier.$exists'],
    [{ 'body.tier': 1 }, 'q.body.tier'],
  ])('%j', (query, where) => {
    expect(() => compileQuery(query, 'q')).toThrow(where);
  });
});

import { describe, expect, test } from 'vitest';
import { GatewayError } from '../../../../core/index.js';
import { isAnthropicModel, modelPath, regionOrigin, vertexOrigin } from '../../../../plugins/providers/vertex-ai/index.js';

const target = (fields: Record<string, unknown>) => ({ provider: 'vertex-ai', ...fields });

function refusedParam(fn: () => unknown): string | null {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(GatewayError);
    expect((err as GatewayError).status).toBe(400);
    return (err as GatewayError).param;
  }
  throw new Error('expected a 400');
}

describe('vertex URLs', () => {
  test('regional, global and multi-region hosts', () => {
    expect(regionOrigin('us-central1')).toBe('https://us-central1-aiplatform.googleapis.com');
    expect(regionOrigin('europe-west4')).toBe('https://europe-west4-aiplatform.googleapis.com');
    expect(regionOrigin('global')).toBe('https://aiplatform.googleapis.com');
    expect(regionOrigin('us')).toBe('https://aiplatform.us.rep.googleapis.com');
    expect(regionOrigin('eu')).toBe('https://aiplatform.eu.rep.googleapis.com');
  });

  test('custom_host replaces scheme and host (trailing slashes dropped); the path is kept', () => {
    expect(vertexOrigin(target({ vertex_region: 'us-central1' }))).toBe('https://us-central1-aiplatform.googleapis.com');
    expect(vertexOrigin(target({ vertex_region: 'global' }))).toBe('https://aiplatform.googleapis.com');
    expect(vertexOrigin(target({ vertex_region: 'us-central1', custom_host: 'http://127.0.0.1:9000/' }))).toBe('http://127.0.0.1:9000');
  });

  test('model paths for Gemini and Claude, project from the target or the service account', () => {
    expect(modelPath(target({ vertex_region: 'us-central1', vertex_project_id: 'p1' }), 'google', 'gemini-2.5-flash', 'generateContent')).toBe(
      '/v1/projects/p1/locations/us-central1/publishers/google/models/gemini-2.5-flash:generateContent',
    );
    expect(modelPath(target({ vertex_region: 'global', vertex_service_account_json: { project_id: 'sa-proj' } }), 'anthropic', 'claude-x@2025', 'streamRawPredict')).toBe(
      '/v1/projects/sa-proj/locations/global/publishers/anthropic/models/claude-x@2025:streamRawPredict',
    );
    expect(modelPath(target({ vertex_region: 'global', vertex_project_id: 'mine', vertex_service_account_json: { project_id: 'sa-proj' } }), 'google', 'g', 'predict')).toContain(
      '/projects/mine/',
    );
  });

  test('a missing or unsafe region or project is a 400 naming the field', () => {
    expect(refusedParam(() => vertexOrigin(target({})))).toBe('vertex_region');
    expect(refusedParam(() => vertexOrigin(target({ vertex_region: 'evil.com/x' })))).toBe('vertex_region');
    expect(refusedParam(() => modelPath(target({ vertex_region: 'us-central1' }), 'google', 'g', 'generateContent'))).toBe('vertex_project_id');
    expect(refusedParam(() => modelPath(target({ vertex_region: 'us-central1', vertex_project_id: 'a/b' }), 'google', 'g', 'generateContent'))).toBe('vertex_project_id');
  });

  test('Claude models are those whose name starts with "claude"', () => {
    expect(isAnthropicModel('claude-sonnet-4-5@20250929')).toBe(true);
    expect(isAnthropicModel('Claude-3-haiku')).toBe(true);
    expect(isAnthropicModel('gemini-2.5-flash')).toBe(false);
    expect(isAnthropicModel('my-claude')).toBe(false);
  });
});

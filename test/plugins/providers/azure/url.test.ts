import { describe, expect, test } from 'vitest';
import { GatewayError } from '../../../../core/index.js';
import { azureAIOrigin, azureAIPath, placementHeaders } from '../../../../plugins/providers/azure/ai/url.js';
import { azureOpenAIURL, pickDeployment } from '../../../../plugins/providers/azure/openai/url.js';

const param = (fn: () => unknown): string | null => {
  try {
    fn();
  } catch (err) {
    if (err instanceof GatewayError) return err.param;
    throw err;
  }
  throw new Error('expected a GatewayError');
};

const DEPLOYMENTS = [
  { deployment_id: 'gpt4o-east', alias: 'gpt-4o', api_version: '2024-10-21' },
  { deployment_id: 'mini-east', alias: 'gpt-4o-mini', api_version: '2025-04-01-preview', is_default: true },
];

describe('azure-openai URL building', () => {
  test.each([
    // [case, target, model, operation, url]
    ['resource + deployment_id + api_version', { resource_name: 'contoso', deployment_id: 'dep', api_version: '2024-10-21' }, 'gpt-4o', 'chat/completions', 'https://contoso.openai.azure.com/openai/deployments/dep/chat/completions?api-version=2024-10-21'],
    ['completions', { resource_name: 'contoso', deployment_id: 'dep', api_version: '2024-10-21' }, 'x', 'completions', 'https://contoso.openai.azure.com/openai/deployments/dep/completions?api-version=2024-10-21'],
    ['embeddings', { resource_name: 'contoso', deployment_id: 'emb', api_version: '2024-10-21' }, 'x', 'embeddings', 'https://contoso.openai.azure.com/openai/deployments/emb/embeddings?api-version=2024-10-21'],
    ['no deployment: the model names it', { resource_name: 'contoso', api_version: '2024-10-21' }, 'my-dep', 'chat/completions', 'https://contoso.openai.azure.com/openai/deployments/my-dep/chat/completions?api-version=2024-10-21'],
    ['deployments: alias picks, with its api_version', { resource_name: 'contoso', api_version: 'ignored', deployments: DEPLOYMENTS }, 'gpt-4o', 'chat/completions', 'https://contoso.openai.azure.com/openai/deployments/gpt4o-east/chat/completions?api-version=2024-10-21'],
    ['deployments: no alias match → is_default', { resource_name: 'contoso', deployments: DEPLOYMENTS }, 'other', 'chat/completions', 'https://contoso.openai.azure.com/openai/deployments/mini-east/chat/completions?api-version=2025-04-01-preview'],
    ['deployments: no model → is_default', { resource_name: 'contoso', deployments: DEPLOYMENTS }, undefined, 'embeddings', 'https://contoso.openai.azure.com/openai/deployments/mini-east/embeddings?api-version=2025-04-01-preview'],
    ['deployments without default, no match → deployment_id + api_version', { resource_name: 'contoso', deployment_id: 'fallback', api_version: '2024-06-01', deployments: [DEPLOYMENTS[0]] }, 'other', 'chat/completions', 'https://contoso.openai.azure.com/openai/deployments/fallback/chat/completions?api-version=2024-06-01'],
    ['alias beats deployment_id', { resource_name: 'contoso', deployment_id: 'fallback', api_version: '2024-06-01', deployments: [DEPLOYMENTS[0]] }, 'gpt-4o', 'chat/completions', 'https://contoso.openai.azure.com/openai/deployments/gpt4o-east/chat/completions?api-version=2024-10-21'],
    ['custom_host replaces the resource host', { resource_name: 'contoso', custom_host: 'http://127.0.0.1:9/', deployment_id: 'dep', api_version: '2024-10-21' }, 'x', 'chat/completions', 'http://127.0.0.1:9/openai/deployments/dep/chat/completions?api-version=2024-10-21'],
    ['custom_host that already ends with /openai', { custom_host: 'https://gw.example/azure/openai', deployment_id: 'dep', api_version: '2024-10-21' }, 'x', 'chat/completions', 'https://gw.example/azure/openai/deployments/dep/chat/completions?api-version=2024-10-21'],
    ['v1 API: no deployment segment, no api-version', { resource_name: 'contoso', deployment_id: 'dep', api_version: 'v1' }, 'x', 'chat/completions', 'https://contoso.openai.azure.com/openai/v1/chat/completions'],
    ['deployment names and versions are encoded', { resource_name: 'contoso', deployment_id: 'my dep/1', api_version: '2024-10-21&x=1' }, 'x', 'chat/completions', 'https://contoso.openai.azure.com/openai/deployments/my%20dep%2F1/chat/completions?api-version=2024-10-21%26x%3D1'],
  ])('%s', (_name, target, model, operation, url) => {
    expect(azureOpenAIURL({ provider: 'azure-openai', ...target }, model, operation)).toBe(url);
  });

  test.each([
    ['no resource_name and no custom_host', { deployment_id: 'd', api_version: 'v' }, 'm', 'resource_name'],
    ['a resource_name that is not a host label', { resource_name: 'evil.com/x', deployment_id: 'd', api_version: 'v' }, 'm', 'resource_name'],
    ['no api_version anywhere', { resource_name: 'r', deployment_id: 'd' }, 'm', 'api_version'],
    ['no deployment and no model', { resource_name: 'r', api_version: 'v' }, undefined, 'deployment_id'],
    ['deployments with neither a matching alias nor a default', { resource_name: 'r', deployments: [DEPLOYMENTS[0]] }, 'other', 'model'],
  ])('%s → 400 naming %s', (_name, target, model, expected) => {
    expect(param(() => azureOpenAIURL({ provider: 'azure-openai', ...target }, model, 'chat/completions'))).toBe(expected);
  });

  test('pickDeployment returns the deployment and version', () => {
    expect(pickDeployment({ deployments: DEPLOYMENTS }, 'gpt-4o-mini')).toEqual({ deployment: 'mini-east', apiVersion: '2025-04-01-preview' });
  });
});

describe('azure-ai URL building', () => {
  const url = (target: Record<string, unknown>, op: 'chat/completions' | 'embeddings' = 'chat/completions') => azureAIOrigin(target) + azureAIPath(target, op);
  test.each([
    ['serverless (default type)', { azure_endpoint_name: 'mistral-ep', azure_region: 'eastus2' }, 'chat/completions', 'https://mistral-ep.eastus2.models.ai.azure.com/chat/completions'],
    ['serverless with api version', { azure_deployment_type: 'serverless', azure_endpoint_name: 'ep', azure_region: 'westeurope', azure_api_version: '2024-05-01-preview' }, 'chat/completions', 'https://ep.westeurope.models.ai.azure.com/chat/completions?api-version=2024-05-01-preview'],
    ['serverless embeddings', { azure_endpoint_name: 'ep', azure_region: 'eastus' }, 'embeddings', 'https://ep.eastus.models.ai.azure.com/embeddings'],
    ['managed', { azure_deployment_type: 'managed', azure_endpoint_name: 'my-endpoint', azure_region: 'eastus', azure_deployment_name: 'blue' }, 'chat/completions', 'https://my-endpoint.eastus.inference.ml.azure.com/score'],
    ['managed with api version, embeddings', { azure_deployment_type: 'managed', azure_endpoint_name: 'e', azure_region: 'eastus', azure_api_version: '2024-01-01' }, 'embeddings', 'https://e.eastus.inference.ml.azure.com/score?api-version=2024-01-01'],
    ['custom_host, serverless', { custom_host: 'http://127.0.0.1:9/', azure_endpoint_name: 'e', azure_region: 'r' }, 'chat/completions', 'http://127.0.0.1:9/chat/completions'],
    ['custom_host, managed', { custom_host: 'http://127.0.0.1:9', azure_deployment_type: 'managed' }, 'chat/completions', 'http://127.0.0.1:9/score'],
  ] as const)('%s', (_name, target, op, expected) => {
    expect(url({ ...target }, op)).toBe(expected);
  });

  test.each([
    ['no endpoint name', { azure_region: 'eastus' }, 'azure_endpoint_name'],
    ['no region', { azure_endpoint_name: 'e' }, 'azure_region'],
    ['a region that is not a host label', { azure_endpoint_name: 'e', azure_region: 'east.us' }, 'azure_region'],
    ['an unknown deployment type', { azure_endpoint_name: 'e', azure_region: 'r', azure_deployment_type: 'edge' }, 'azure_deployment_type'],
  ])('%s → 400 naming %s', (_name, target, expected) => {
    expect(param(() => url(target))).toBe(expected);
  });

  test('azureml-model-deployment only for managed endpoints with a deployment name', () => {
    expect(placementHeaders({ azure_deployment_type: 'managed', azure_deployment_name: 'blue' })).toEqual({ 'azureml-model-deployment': 'blue' });
    expect(placementHeaders({ azure_deployment_type: 'managed' })).toEqual({});
    expect(placementHeaders({ azure_deployment_type: 'serverless', azure_deployment_name: 'blue' })).toEqual({});
  });
});

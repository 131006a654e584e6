/** Sealing moved to the SDK (`sdk/secret-box.ts`), shared with the batches plugin; kept here for the plugin's own imports. */
export { createSecretBox, loadEncryptionKey, maskSecret, parseEncryptionKey, type LoadedKey, type SecretBox } from '../../sdk/index.js';

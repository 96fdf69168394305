/**
 * Generator backends: one interface (backend.ts), its two implementations beside it (the procedural
 * renderer, a model server speaking OpenAI's API), and the choice between them (create.ts).
 */
export type { GeneratorBackend, ImageEditRequest, ImageRequest, VideoRequest } from './backend';
export { createGeneratorBackend } from './create';
export { OpenAiCompatibleBackend, UpstreamUnavailableError, type OpenAiCompatibleOptions } from './openai-compatible';
export { ProceduralBackend } from './procedural';

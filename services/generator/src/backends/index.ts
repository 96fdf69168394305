/**
 * Generator backends: one interface (backend.ts), its two implementations beside it (the procedural
 * renderer, a model server speaking OpenAI's API), and the choice between them (create.ts). The
 * model server's backend is not exported from here: create.ts loads it (and the openai SDK) only
 * when it is the one chosen.
 */
export type { GeneratorBackend, ImageEditRequest, ImageRequest, VideoRequest } from './backend';
export { createGeneratorBackend } from './create';
export type { OpenAiCompatibleOptions } from './openai-compatible';
export { ProceduralBackend } from './procedural';

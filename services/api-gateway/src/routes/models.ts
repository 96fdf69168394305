import { Router } from 'express';
import { MODEL_CATALOG, MODEL_CATALOG_CREATED_AT } from '@media/domain';
import { ApiError } from '../http/api-error';

export function modelRoutes(): Router {
  const router = Router();
  const describe = (m: (typeof MODEL_CATALOG)[number]) =>
    m.kind === 'image'
      ? {
          id: m.id,
          object: 'model',
          created: MODEL_CATALOG_CREATED_AT,
          owned_by: 'system',
          kind: m.kind,
          sizes: Object.keys(m.pricePerImage),
          pricing: { per_image: m.pricePerImage },
        }
      : {
          id: m.id,
          object: 'model',
          created: MODEL_CATALOG_CREATED_AT,
          owned_by: 'system',
          kind: m.kind,
          sizes: m.sizes,
          seconds: { min: m.minSeconds, max: m.maxSeconds, default: m.defaultSeconds },
          pricing: { per_second: m.pricePerSecond, audio_per_second: m.audioPricePerSecond },
        };
  router.get('/', (_req, res) => {
    res.json({ object: 'list', data: MODEL_CATALOG.map(describe) });
  });
  router.get('/:id', (req, res) => {
    const model = MODEL_CATALOG.find((m) => m.id === req.params.id);
    if (!model) throw new ApiError(404, 'invalid_request_error', `The model '${req.params.id}' does not exist.`, 'model', 'model_not_found');
    res.json(describe(model));
  });
  return router;
}

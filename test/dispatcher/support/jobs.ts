import { api, type TestStack } from '../../support/stack';

/** Creates jobs through the real gateway HTTP API. */
export class JobClient {
  private readonly call: ReturnType<typeof api>;

  constructor(stack: TestStack, apiKey: string) {
    this.call = api(stack, apiKey);
  }

  /** An image request with a callback: accepted with 202, made in the background. Returns its `req_` id. */
  async image(callbackUrl: string, prompt = 'a lighthouse at dusk', extra: Record<string, unknown> = {}): Promise<string> {
    const res = await this.call('/v1/images/generations', {
      method: 'POST',
      json: { model: 'pixel-1', prompt, size: '256x256', callback_url: callbackUrl, ...extra },
    });
    if (res.status !== 202) throw new Error(`image creation answered ${res.status}: ${res.text}`);
    return res.json.id as string;
  }

  /** A one-second video with a callback. Returns its `video_` id. */
  async video(callbackUrl: string, prompt = 'waves on a beach'): Promise<string> {
    const res = await this.call('/v1/videos', {
      method: 'POST',
      json: { model: 'motion-1', prompt, seconds: 1, size: '640x360', callback_url: callbackUrl },
    });
    if (res.status !== 200) throw new Error(`video creation answered ${res.status}: ${res.text}`);
    return res.json.id as string;
  }

  /** A synchronous image call without `callback_url`: answers with the images. Returns its `req_` id. */
  async syncImage(prompt = 'a quiet harbour'): Promise<string> {
    const res = await this.call('/v1/images/generations', { method: 'POST', json: { model: 'pixel-1', prompt, size: '256x256' } });
    if (res.status !== 200) throw new Error(`image creation answered ${res.status}: ${res.text}`);
    return res.headers.get('x-request-id')!;
  }

  /** GET of a job as the API shows it. */
  async get(id: string): Promise<any> {
    const res = await this.call(id.startsWith('video_') ? `/v1/videos/${id}` : `/v1/images/${id}`);
    if (res.status !== 200) throw new Error(`GET ${id} answered ${res.status}: ${res.text}`);
    return res.json;
  }
}

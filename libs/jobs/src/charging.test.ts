import { findModel, type ImageModel, type JobRecord, type VideoModel } from '@media/domain';
import { chargeFor, imageCost, imagePrice, UnpricedJobError, videoCost } from './charging';

describe('charging', () => {
  it('prices from the catalog without float drift', () => {
    const image = findModel('pixel-1') as ImageModel;
    const video = findModel('motion-1') as VideoModel;
    expect(imageCost(image, '1024x1024', 3)).toBe(0.12);
    expect(videoCost(video, 4, false)).toBe(0.4);
    expect(videoCost(video, 3, true)).toBe(0.36);
  });

  it.each(['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf', 'isPrototypeOf'])('knows no image size called %s', (size) => {
    const image = findModel('pixel-1') as ImageModel;
    expect(imagePrice(image, size)).toBeUndefined();
    expect(() => imageCost(image, size, 1)).toThrow(/no price/);
    expect(findModel(size)).toBeUndefined();
  });

  it('charges a finished job the price of its model, as one ledger entry', () => {
    const job = { id: 'img_1', workspace_id: 'ws_1', kind: 'image', model: 'pixel-1', size: '1024x1024', n: 2 } as unknown as JobRecord;
    expect(chargeFor(job, 5_000)).toEqual({ job_id: 'img_1', workspace_id: 'ws_1', model: 'pixel-1', amount: 0.08, created_ms: 5_000 });
    expect(() => chargeFor({ ...job, model: 'gone-1' } as JobRecord, 5_000)).toThrow(UnpricedJobError);
    expect(() => chargeFor({ ...job, model: 'motion-1' } as JobRecord, 5_000)).toThrow(/cannot make images/);
  });
});

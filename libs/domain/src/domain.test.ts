import { CLOCK_SKEW_SECONDS, LinkSigner } from './links';
import { describeSize } from './models';
import { JobPresenter } from './presenter';
import { isSynchronous, type ImageJob, type VideoJob } from './jobs';
import { asyncImage, syncImage, video } from './test-support/jobs';

const signer = new LinkSigner('k'.repeat(32), 'https://api.example.com', 86_400);

describe('LinkSigner', () => {
  it('mints links that check out until they expire', () => {
    const link = signer.mint('ws_1/job_1/0.png', 1_000);
    expect(link.expires_at).toBe(87_400);
    const url = new URL(link.url);
    expect(url.pathname).toBe('/v1/files/ws_1/job_1/0.png');
    const [expires, signature] = [url.searchParams.get('expires')!, url.searchParams.get('signature')!];
    expect(signer.check('ws_1/job_1/0.png', expires, signature, 87_400)).toBe('ok');
    expect(signer.check('ws_1/job_1/0.png', expires, signature, 87_401)).toBe('expired');
    expect(signer.check('ws_1/job_1/1.png', expires, signature, 1_000)).toBe('invalid');
    expect(signer.check('ws_1/job_1/0.png', String(Number(expires) + 1), signature, 1_000)).toBe('invalid');
    expect(new LinkSigner('x'.repeat(32), 'https://api.example.com', 60).check('ws_1/job_1/0.png', expires, signature, 1_000)).toBe('invalid');
  });

  it('refuses a link that would last longer than the TTL allows, however well it is signed', () => {
    // Signed with the same key by someone who chose the expiry: the year 5138.
    const forged = new LinkSigner('k'.repeat(32), 'https://api.example.com', 100_000_000_000).mint('ws_1/job_1/0.png', 1_000);
    const url = new URL(forged.url);
    expect(signer.check('ws_1/job_1/0.png', url.searchParams.get('expires')!, url.searchParams.get('signature')!, 1_000)).toBe('invalid');
    // A replica whose clock runs up to five minutes ahead still mints links the others accept.
    const ahead = signer.mint('ws_1/job_1/0.png', 1_000 + CLOCK_SKEW_SECONDS);
    const aheadUrl = new URL(ahead.url);
    expect(signer.check('ws_1/job_1/0.png', aheadUrl.searchParams.get('expires')!, aheadUrl.searchParams.get('signature')!, 1_000)).toBe('ok');
  });

  it('mints a fresh link on every render', () => {
    expect(signer.mint('a/b.png', 1_000).url).not.toBe(signer.mint('a/b.png', 1_001).url);
  });
});

describe('models', () => {
  it('derives resolution and aspect ratio from size', () => {
    expect(describeSize('1280x720')).toEqual({ resolution: '720p', aspect_ratio: '16:9' });
    expect(describeSize('1080x1920')).toEqual({ resolution: '1080p', aspect_ratio: '9:16' });
  });
});

describe('JobPresenter', () => {
  const presenter = new JobPresenter(signer);
  const base = {
    workspace_id: 'ws_1',
    model: 'motion-1',
    prompt: 'p',
    seed: 1,
    created_ms: 1_000_500,
    cost: null,
    error: null,
    callback_url: 'https://example.com/hook',
    request_id: 'req_1',
    finished_ms: null,
  };

  it('renders an unfinished video with nulls where the spec says so', () => {
    const video: VideoJob = {
      ...base,
      id: 'video_1',
      kind: 'video',
      status: 'in_progress',
      seconds: 4,
      size: '1280x720',
      generate_audio: true,
      progress: 40,
      output: null,
    };
    expect(presenter.video(video)).toEqual({
      id: 'video_1',
      object: 'video',
      model: 'motion-1',
      status: 'in_progress',
      progress: 40,
      created_at: 1_000,
      completed_at: null,
      expires_at: null,
      seconds: 4,
      resolution: '720p',
      aspect_ratio: '16:9',
      size: '1280x720',
      generate_audio: true,
      prompt: 'p',
      remixed_from_video_id: null,
      url: null,
      url_expires_at: null,
      cost: null,
      error: null,
      callback_url: 'https://example.com/hook',
    });
  });

  it('renders a completed image request with links only, whatever response_format said', () => {
    const image: ImageJob = {
      ...base,
      id: 'req_1',
      kind: 'image',
      operation: 'generation',
      model: 'pixel-1',
      status: 'completed',
      finished_ms: 2_000_000,
      cost: 0.08,
      n: 2,
      size: '1024x1024',
      output_format: 'png',
      response_format: 'b64_json',
      inputs: [],
      mask: null,
      outputs: ['ws_1/req_1/0.png', 'ws_1/req_1/1.png'],
    };
    const rendered = presenter.imageRequest(image, 5_000);
    expect(rendered.status).toBe('completed');
    expect(rendered.completed_at).toBe(2_000);
    expect(rendered.data).toHaveLength(2);
    for (const item of rendered.data) expect(Object.keys(item)).toEqual(['url']);
    expect(rendered.url_expires_at).toBe(5_000 + 86_400);
  });

  it('shows when a finished video is removed, and cuts its link there', () => {
    const video: VideoJob = {
      ...base,
      id: 'video_2',
      kind: 'video',
      status: 'completed',
      finished_ms: 2_000_000,
      expires_ms: 2_000_000 + 7 * 86_400_000,
      cost: 0.4,
      seconds: 4,
      size: '1280x720',
      generate_audio: false,
      progress: 100,
      output: 'ws_1/video_2/video.mp4',
    };
    // Well before removal: the full TTL.
    const removal = 2_000 + 7 * 86_400;
    expect(presenter.video(video, 2_000)).toMatchObject({ expires_at: removal, url_expires_at: 2_000 + 86_400 });
    // A link minted a minute before removal must not outlive the file.
    expect(presenter.video(video, removal - 60)).toMatchObject({ expires_at: removal, url_expires_at: removal });
    // A failed job is removed too, and says when.
    expect(presenter.video({ ...video, status: 'failed', output: null, cost: null })).toMatchObject({ expires_at: removal, url: null, completed_at: null });
  });
});

describe('synchronous calls', () => {
  it('calls only an image request without a callback URL synchronous', () => {
    expect(isSynchronous(syncImage)).toBe(true);
    expect(isSynchronous({ ...syncImage, operation: 'edit' })).toBe(true);
    expect(isSynchronous(asyncImage)).toBe(false);
    expect(isSynchronous(video)).toBe(false);
  });
});

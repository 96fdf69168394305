/** Output moderation against a configured block list; a match ends the job `moderation_blocked`. */
export class ModerationPolicy {
  private readonly terms: string[];

  constructor(blocklist: readonly string[]) {
    this.terms = blocklist.map((t) => t.toLowerCase()).filter((t) => t.length > 0);
  }

  /** The first blocked term found in the text, if any. */
  blockedTerm(text: string): string | undefined {
    const lower = text.toLowerCase();
    return this.terms.find((term) => lower.includes(term));
  }
}

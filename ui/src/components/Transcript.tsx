// The conversation, virtualized: only the entries near the viewport are in the page, so a
// session of thousands of lines scrolls as smoothly as a short one. Rows are measured as they
// render (their heights vary); the view follows new entries while the reader is at the bottom,
// and keeps its place when older entries are put in front.
import { memo, useCallback, useLayoutEffect, useRef, useState, useSyncExternalStore } from 'react';
import { observeElementRect, useVirtualizer, type Virtualizer } from '@tanstack/react-virtual';
import type { Item } from '../lib/transcript';
import type { PendingText } from '../lib/pendingText';
import { agentLabel, TranscriptEntry } from './TranscriptEntry';
import './Transcript.css';
import { Markdown } from './Markdown';
import { Empty } from './ui';

export interface OlderPages {
  hasOlder: boolean;
  loading: boolean;
  error?: string;
  load: () => void;
}

/** Within this many pixels of the bottom counts as "at the bottom" (for the "Latest" button). */
const BOTTOM_SLACK = 48;
/** The view follows new content when it was this close to the bottom (rounding, no more). */
const FOLLOW_SLACK = 4;
/** Older entries are read when the reader comes this close to the top. */
const TOP_SLACK = 400;
/** A container with no height yet (not laid out, or a test's DOM) is given a screenful. */
const FALLBACK_HEIGHT = 800;

const noPending = { subscribe: () => () => {}, active: () => false, text: () => '' };

export function Transcript(props: { items: Item[]; pending?: PendingText; agent?: string; older?: OlderPages }) {
  const { items, older } = props;
  const pending = props.pending ?? noPending;
  const streaming = useSyncExternalStore(pending.subscribe, pending.active);
  // (A page of stored lines may hold nothing to show, only streamed tokens: read on then.)
  if (items.length === 0 && !streaming && !older?.hasOlder) {
    return <Empty title="Nothing said yet.">Send a message below; the conversation appears here as it happens.</Empty>;
  }
  return <VirtualTranscript {...props} pending={pending} streaming={streaming} older={older} />;
}

function VirtualTranscript(props: {
  items: Item[];
  pending: Pick<PendingText, 'subscribe' | 'text'>;
  streaming: boolean;
  agent?: string;
  older?: OlderPages;
}) {
  const { items, streaming, older } = props;
  const scroller = useRef<HTMLDivElement>(null);
  const count = items.length + (streaming ? 1 : 0);
  const virtualizer = useVirtualizer({
    count,
    getScrollElement: () => scroller.current,
    estimateSize: (i) => (items[i]?.kind === 'tool' || items[i]?.kind === 'result' ? 44 : 96),
    getItemKey: (i) => items[i]?.key ?? 'pending',
    overscan: 8,
    observeElementRect: observeRectOrScreenful,
  });

  // Follow the bottom while the reader is there; keep the distance from the bottom (that is,
  // the place in the text) when entries are put in front. "There" is judged against the height
  // the content had before this render, whatever order the scroll handlers ran in.
  const [atBottom, setAtBottom] = useState(true);
  const lastHeight = useRef(0);
  const fromBottom = useRef(0);
  const firstKey = items[0]?.key;
  const previousFirst = useRef(firstKey);
  useLayoutEffect(() => {
    const el = scroller.current;
    if (!el) return;
    // Only a change of the content moves the view: renders caused by the reader's own scrolling
    // (a wheel scrolls in small animated steps) must not pull them back down.
    const grew = el.scrollHeight !== lastHeight.current;
    const wasAtBottom = lastHeight.current - el.scrollTop - el.clientHeight <= FOLLOW_SLACK;
    if (firstKey !== previousFirst.current && !wasAtBottom) el.scrollTop = el.scrollHeight - fromBottom.current;
    else if (grew && wasAtBottom) el.scrollTop = el.scrollHeight;
    previousFirst.current = firstKey;
    lastHeight.current = el.scrollHeight;
    fromBottom.current = el.scrollHeight - el.scrollTop;
    // A page of mostly invisible lines (streamed tokens) may not fill the view: read on.
    if (older?.hasOlder && !older.loading && !older.error && el.clientHeight > 0 && el.scrollHeight <= el.clientHeight + TOP_SLACK) {
      older.load();
    }
  });

  const onScroll = useCallback(() => {
    const el = scroller.current;
    if (!el) return;
    setAtBottom(el.scrollHeight - el.scrollTop - el.clientHeight < BOTTOM_SLACK);
    fromBottom.current = el.scrollHeight - el.scrollTop;
    if (el.scrollTop < TOP_SLACK && older?.hasOlder && !older.loading && !older.error) older.load();
  }, [older]);

  const toBottom = () => {
    const el = scroller.current;
    if (el) el.scrollTop = el.scrollHeight;
    setAtBottom(true);
  };

  return (
    <div className="transcript-frame">
      <OlderNote older={older} />
      <div className="transcript-scroll" ref={scroller} onScroll={onScroll}>
        <ol className="transcript" data-testid="transcript" style={{ height: virtualizer.getTotalSize() }}>
          {virtualizer.getVirtualItems().map((row) => {
            const item = items[row.index];
            return (
              // The row is measured with its spacing (margins are not), the entry inside is styled.
              <li key={row.key} data-index={row.index} ref={virtualizer.measureElement} className="transcript-row" style={{ transform: `translateY(${row.start}px)` }}>
                <div className={item ? `entry entry-${item.kind}` : 'entry entry-assistant entry-pending'}>
                  {item ? <Row item={item} agent={props.agent} /> : <PendingBubble pending={props.pending} agent={props.agent} />}
                </div>
              </li>
            );
          })}
        </ol>
      </div>
      {!atBottom && (
        <button className="button small to-latest" onClick={toBottom}>
          ↓ Latest
        </button>
      )}
    </div>
  );
}

/** Rows render again only when their item changed (an item is rebuilt when its line list is). */
const Row = memo(TranscriptEntry, (a, b) => a.agent === b.agent && sameItem(a.item, b.item));

function sameItem(a: Item, b: Item): boolean {
  if (a === b) return true;
  if (a.kind !== b.kind || a.key !== b.key) return false;
  return JSON.stringify(a) === JSON.stringify(b);
}

function PendingBubble({ pending, agent }: { pending: Pick<PendingText, 'subscribe' | 'text'>; agent?: string }) {
  const text = useSyncExternalStore(pending.subscribe, pending.text);
  return (
    <>
      <div className="who">
        {agentLabel(agent)} <span className="typing">writing…</span>
      </div>
      <Markdown text={text} />
    </>
  );
}

function OlderNote({ older }: { older?: OlderPages }) {
  if (!older) return null;
  if (older.error) {
    return (
      <div className="older-note error-note" role="alert">
        Could not load earlier lines: {older.error}{' '}
        <button className="button small" onClick={older.load}>
          Retry
        </button>
      </div>
    );
  }
  if (older.loading) return <div className="older-note muted small">Loading earlier lines…</div>;
  if (!older.hasOlder) return <div className="older-note muted small">The beginning of the conversation.</div>;
  return (
    <div className="older-note muted small">
      <button className="link-button" onClick={older.load}>
        Load earlier lines
      </button>
    </div>
  );
}

function observeRectOrScreenful(instance: Virtualizer<HTMLDivElement, Element>, cb: (rect: { width: number; height: number }) => void) {
  return observeElementRect(instance, (rect) => cb(rect.height > 0 ? rect : { width: rect.width, height: FALLBACK_HEIGHT }));
}

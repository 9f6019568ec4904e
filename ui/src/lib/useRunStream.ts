// Follows one run's own stream (`GET /api/executions/{id}/stream`) from its first event until
// its `agent.execution.finished` frame, resuming with `?since=` after a dropped connection.
import { useEffect, useState } from 'react';
import { authHeaders } from '../api/client';
import { applyAgentFrame } from '../query/agentFrames';
import { queryClient } from '../query/client';
import { applyRunFrame, EMPTY_OUTPUT, type RunOutput } from './executionOutput';
import { backoff, SseParser, type Frame } from './sse';

/** Frames are drawn at most this often (tokens can arrive hundreds a second). */
const DRAW_MS = 50;

export interface RunStream extends RunOutput {
  /** Why the stream could not be read (it keeps retrying). */
  error?: string;
}

export function useRunStream(executionId: string, follow: boolean): RunStream {
  const [shown, setShown] = useState<RunStream>(EMPTY_OUTPUT);

  useEffect(() => {
    setShown(EMPTY_OUTPUT);
    if (!follow) return;
    let state: RunOutput = EMPTY_OUTPUT;
    let error: string | undefined;
    let timer: ReturnType<typeof setTimeout> | null = null;
    let stopped = false;
    let controller: AbortController | null = null;
    const draw = () => {
      timer = null;
      setShown({ ...state, error });
    };
    const schedule = () => {
      if (timer === null) timer = setTimeout(draw, DRAW_MS);
    };
    const onFrame = (frame: Frame, id: number | null) => {
      state = applyRunFrame(state, frame, id);
      // The run's start and end also update its row in the history and its cached detail.
      if (frame.type?.startsWith('agent.execution.')) applyAgentFrame(queryClient, frame);
      schedule();
    };

    const run = async () => {
      for (let attempt = 0; !stopped && !state.finished; ) {
        controller = new AbortController();
        // From the first event: the run's topic keeps its history, so the output is whole.
        const since = state.lastSeq ?? 0;
        try {
          const res = await fetch(`/api/executions/${encodeURIComponent(executionId)}/stream?since=${since}`, {
            signal: controller.signal,
            headers: { Accept: 'text/event-stream', ...authHeaders() },
          });
          if (!res.ok || !res.body) throw new Error(`The run's stream answered ${res.status}.`);
          attempt = 0;
          error = undefined;
          const parser = new SseParser((m) => {
            const frame = parseFrame(m.data);
            if (frame) onFrame(frame, m.id !== undefined && /^\d+$/.test(m.id) ? Number(m.id) : null);
          });
          const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
          while (!state.finished) {
            const { value, done } = await reader.read();
            if (done) break;
            parser.push(value);
          }
          if (state.finished) void reader.cancel().catch(() => undefined);
        } catch (e) {
          if (stopped) return;
          error = e instanceof Error && e.name !== 'AbortError' ? e.message : undefined;
        }
        schedule();
        if (stopped || state.finished) break;
        await new Promise((r) => setTimeout(r, backoff(attempt++)));
      }
    };
    void run();
    return () => {
      stopped = true;
      controller?.abort();
      if (timer !== null) clearTimeout(timer);
    };
  }, [executionId, follow]);

  return shown;
}

function parseFrame(text: string): Frame | null {
  try {
    const v: unknown = JSON.parse(text);
    return v && typeof v === 'object' ? (v as Frame) : null;
  } catch {
    return null;
  }
}

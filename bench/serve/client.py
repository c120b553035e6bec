#!/usr/bin/env python3
"""bench/serve's client: times requests against a running `graft serve` (standard library only).

  client.py --url http://127.0.0.1:PORT --prompt-file F --n N --clients C [--reps R]

Each of C clients sends R streaming greedy /v1/completions requests of N tokens at once; prints one
JSON object: per request the time to first token (first text event) and the server's own
prefill/decode tok/s (the final event's `graft` field), and the aggregate generated tokens over the
wall time from the first request sent to the last answer received."""
import argparse, json, statistics, threading, time, urllib.request

ap = argparse.ArgumentParser()
ap.add_argument("--url", required=True)
ap.add_argument("--prompt-file", required=True)
ap.add_argument("--n", type=int, default=128)
ap.add_argument("--clients", type=int, default=1)
ap.add_argument("--reps", type=int, default=1)
ap.add_argument("--no-stream", action="store_true",
                help="whole answers: the client sleeps in recv while the server decodes (no time to first token)")
a = ap.parse_args()
prompt = open(a.prompt_file).read().rstrip("\n")

results, lock = [], threading.Lock()


def one():
    if a.no_stream:
        body = json.dumps({"prompt": prompt, "max_tokens": a.n, "temperature": 0}).encode()
        req = urllib.request.Request(a.url + "/v1/completions", data=body, headers={"Content-Type": "application/json"})
        t0 = time.perf_counter()
        with urllib.request.urlopen(req) as r:
            e = json.load(r)
        with lock:
            results.append({"ttft_s": None, "total_s": time.perf_counter() - t0, "graft": e["graft"], "usage": e["usage"]})
        return
    body = json.dumps({"prompt": prompt, "max_tokens": a.n, "temperature": 0, "stream": True,
                       "stream_options": {"include_usage": True}}).encode()
    req = urllib.request.Request(a.url + "/v1/completions", data=body, headers={"Content-Type": "application/json"})
    t0 = time.perf_counter()
    first, graft, usage = None, None, None
    with urllib.request.urlopen(req) as r:
        for raw in r:
            line = raw.decode().strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            e = json.loads(line[6:])
            if e.get("usage"):
                usage = e["usage"]
            if e.get("choices") and e["choices"][0].get("text") and first is None:
                first = time.perf_counter() - t0
            if e.get("graft"):
                graft = e["graft"]
    with lock:
        results.append({"ttft_s": first, "total_s": time.perf_counter() - t0, "graft": graft, "usage": usage})


def client():
    for _ in range(a.reps):
        one()


t0 = time.perf_counter()
threads = [threading.Thread(target=client) for _ in range(a.clients)]
for t in threads:
    t.start()
for t in threads:
    t.join()
wall = time.perf_counter() - t0
tokens = sum(r["usage"]["completion_tokens"] for r in results)
print(json.dumps({
    "clients": a.clients, "requests": len(results), "n": a.n, "wall_s": wall,
    "aggregate_tokens_per_second": tokens / wall,
    "ttft_median_s": None if a.no_stream else statistics.median(r["ttft_s"] for r in results),
    "server_decode_tps_median": statistics.median(r["graft"]["decode_tokens_per_second"] for r in results),
    "server_prefill_tps_median": statistics.median(r["graft"]["prefill_tokens_per_second"] for r in results),
}))

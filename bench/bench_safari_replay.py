"""Safari episodes: file size, record / replay-with-checks / GIF time per turn, on expert games.

    python bench/bench_safari_replay.py            # 10 seeds x both kinds (about half a minute)
    python bench/bench_safari_replay.py --seeds 3  # quicker

Replaying re-renders every picture from the world instead of storing it, so its cost per turn is
reported beside the recording's (the file stays a few kB instead of one PNG pair per turn).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path


def main(seeds: int = 10) -> None:
    from localqwen_safari.episode_file import load_episode
    from localqwen_safari.gif import write_gif
    from localqwen_safari.missions import mission_for_seed
    from localqwen_safari.policies import get_policy
    from localqwen_safari.replay import play_to_end, replay

    sizes, gif_sizes = [], []
    recording = replaying = gif_time = 0.0
    turns = 0
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(1000, 1000 + seeds):
            for kind in ("find-one", "find-two"):
                start = time.perf_counter()
                frames, log = play_to_end(mission_for_seed(kind, seed), get_policy("expert"), "expert")
                recording += time.perf_counter() - start
                path = log.save(Path(tmp) / f"{kind}-{seed}.jsonl")
                sizes.append(path.stat().st_size)
                turns += len(frames)
                start = time.perf_counter()
                frames = replay(load_episode(path))
                replaying += time.perf_counter() - start
                start = time.perf_counter()
                gif = write_gif(frames, Path(tmp) / f"{kind}-{seed}.gif")
                gif_time += time.perf_counter() - start
                gif_sizes.append(gif.stat().st_size)
    games = len(sizes)
    print(f"safari_replay: {games} expert episodes, {turns} turns; episode.jsonl {min(sizes)}-{max(sizes)} B "
          f"(mean {sum(sizes) / games:.0f}); record (play + render) {1000 * recording / turns:.1f} ms/turn; "
          f"load + replay with checks + render {1000 * replaying / turns:.1f} ms/turn; "
          f"GIF {1000 * gif_time / turns:.1f} ms/frame, {min(gif_sizes) // 1000}-{max(gif_sizes) // 1000} kB")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10, help="seeds 1000.. per mission kind")
    main(parser.parse_args().seeds)

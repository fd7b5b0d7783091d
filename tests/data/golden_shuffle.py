#!/usr/bin/env python3
"""Independent reference for the GoldenOrder test in test_shard.cpp.

Transcribed from the definitions, not from the C++ code paths: SplitMix64 (Steele, Lea and Flood 2014)
with the stream derivation documented in core/rng.hpp, Lemire's unbiased multiply-and-reject below(n),
and Fisher-Yates from the top (Durstenfeld). Prints the epoch-0 order of 10 samples for seed 42.
Run: python3 tests/data/golden_shuffle.py  ->  [1, 2, 0, 4, 5, 7, 9, 6, 8, 3]
"""

MASK = (1 << 64) - 1
GOLDEN_GAMMA = 0x9E3779B97F4A7C15
STREAM_SHUFFLE = 0x6461746173687566  # "datashuf", dtbench::data::stream::shuffle


def finalize(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def mix(z):
    return finalize((z + GOLDEN_GAMMA) & MASK)


class Rng:
    def __init__(self, seed, ids=()):
        self.state = mix(seed)
        for i in ids:
            self.state = mix(self.state ^ mix((i + 0x632BE59BD9B4E019) & MASK))

    def next_u64(self):
        self.state = (self.state + GOLDEN_GAMMA) & MASK
        return finalize(self.state)

    def below(self, n):
        while True:
            m = self.next_u64() * n
            low = m & MASK
            if low >= n or low >= ((-n) & MASK) % n:
                return m >> 64


def shuffle(n, seed, epoch):
    rng = Rng(seed, [STREAM_SHUFFLE, epoch])
    perm = list(range(n))
    for i in range(n, 1, -1):
        j = rng.below(i)
        perm[i - 1], perm[j] = perm[j], perm[i - 1]
    return perm


if __name__ == "__main__":
    print(shuffle(10, 42, 0))

"""PyTorch version of feature_hash: fmix64(ids ^ salt) % num_buckets, bit-exact.

torch has no unsigned 64-bit type: int64 multiplication wraps modulo 2^64 exactly like uint64,
XOR is the same on both, a logical right shift is an arithmetic shift with the sign-extended
bits masked off, and the unsigned remainder is taken on the two 32-bit halves."""
import torch

_M1 = 0xFF51AFD7ED558CCD - (1 << 64)  # the fmix64 multipliers as signed int64
_M2 = 0xC4CEB9FE1A85EC53 - (1 << 64)
_LOW31 = (1 << 31) - 1
_LOW32 = (1 << 32) - 1


def _xorshift33(h: torch.Tensor) -> torch.Tensor:
    return h ^ ((h >> 33) & _LOW31)


def run(inputs: dict, params: dict) -> list:
    ids = inputs["ids"]
    salt = int(params["salt"])
    nb = int(params["num_buckets"])
    h = ids ^ salt
    h = _xorshift33(h) * _M1
    h = _xorshift33(h) * _M2
    h = _xorshift33(h)
    hi = (h >> 32) & _LOW32  # h as unsigned = hi * 2^32 + lo
    lo = h & _LOW32
    buckets = ((hi % nb) * ((1 << 32) % nb) + lo) % nb
    return [buckets]

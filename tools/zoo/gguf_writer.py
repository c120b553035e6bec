"""A minimal GGUF v3 writer (little-endian, alignment 32), enough for F32/F16 tensors.

Key order and tensor order are exactly as added, so the output is byte-deterministic.
"""
import struct

import numpy as np

T_U8, T_I8, T_U16, T_I16, T_U32, T_I32, T_F32, T_BOOL, T_STR, T_ARR, T_U64, T_I64, T_F64 = range(13)
GGML_F32, GGML_F16 = 0, 1
ALIGN = 32


def _str(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


class Writer:
    def __init__(self):
        self.kv = []
        self.tensors = []

    def add(self, key, vtype, value):
        self.kv.append((key, vtype, value))

    def u32(self, k, v): self.add(k, T_U32, v)
    def i32(self, k, v): self.add(k, T_I32, v)
    def f32(self, k, v): self.add(k, T_F32, v)
    def bool(self, k, v): self.add(k, T_BOOL, v)
    def str(self, k, v): self.add(k, T_STR, v)
    def arr(self, k, etype, values): self.add(k, T_ARR, (etype, list(values)))

    def tensor(self, name, array, ggml_type):
        """array: numpy, shape in PyTorch order (rows, cols); GGUF ne = reversed shape."""
        if ggml_type == GGML_F16:
            data = np.ascontiguousarray(array, dtype=np.float16)
        else:
            data = np.ascontiguousarray(array, dtype=np.float32)
        self.tensors.append((name, data.shape[::-1], ggml_type, data.astype(data.dtype.newbyteorder("<")).tobytes()))

    @staticmethod
    def _scalar(vtype, v):
        fmt = {T_U8: "<B", T_I8: "<b", T_U16: "<H", T_I16: "<h", T_U32: "<I", T_I32: "<i", T_F32: "<f",
               T_BOOL: "<?", T_U64: "<Q", T_I64: "<q", T_F64: "<d"}
        if vtype == T_STR:
            return _str(v)
        return struct.pack(fmt[vtype], v)

    def write(self, path):
        out = bytearray(b"GGUF")
        out += struct.pack("<IQQ", 3, len(self.tensors), len(self.kv))
        for key, vtype, value in self.kv:
            out += _str(key) + struct.pack("<I", vtype)
            if vtype == T_ARR:
                etype, vals = value
                out += struct.pack("<IQ", etype, len(vals))
                for v in vals:
                    out += self._scalar(etype, v)
            else:
                out += self._scalar(vtype, value)
        offset = 0
        offsets = []
        for name, ne, gt, data in self.tensors:
            offsets.append(offset)
            offset += (len(data) + ALIGN - 1) // ALIGN * ALIGN
        for (name, ne, gt, data), off in zip(self.tensors, offsets):
            out += _str(name) + struct.pack("<I", len(ne))
            for d in ne:
                out += struct.pack("<Q", d)
            out += struct.pack("<IQ", gt, off)
        out += b"\0" * ((-len(out)) % ALIGN)
        for name, ne, gt, data in self.tensors:
            out += data
            out += b"\0" * ((-len(data)) % ALIGN)
        with open(path, "wb") as f:
            f.write(out)

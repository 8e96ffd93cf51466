"""Write the old-format fixtures with the real writers (run once per writer; the output is committed).

Zarr v1 (the 2016 format), with zarr 1.1.0 on Python 3.6::

    /root/.pyenv/versions/3.6.15/bin/python -m venv /tmp/zv1
    /tmp/zv1/bin/pip install "numpy==1.19.5" fasteners cython "setuptools_scm<5"
    /tmp/zv1/bin/pip install --no-build-isolation zarr==1.1.0
    /tmp/zv1/bin/python tests/data/old_formats/make_fixtures.py

v2 structured types of fields of fields (numpy's ``descr``), with zarr-python 2.18 on Python 3.11::

    python3.11 -m venv /tmp/zv218 && /tmp/zv218/bin/pip install "zarr==2.18.*"
    /tmp/zv218/bin/python tests/data/old_formats/make_fixtures.py

The v3.0 draft (2019-2022), with zarr-python 2.18 on Python 3.11::

    python3.11 -m venv /tmp/zv218 && /tmp/zv218/bin/pip install "zarr==2.18.*"
    ZARR_V3_EXPERIMENTAL_API=1 /tmp/zv218/bin/python tests/data/old_formats/make_fixtures.py

Each run replaces its directory (``v1/``, ``v2structs/`` or ``v3draft/``) beside this script: the stores,
and under ``expected/`` each array's values as the writer reads them back (``.npy``) and
``manifest.json`` (every array's path, attributes and what it was written with).
"""

import json
import os
import shutil
import sys

import numpy as np
import zarr

HERE = os.path.dirname(os.path.abspath(__file__))

# (name, dtype) every data type the writers take; written with their default compressor
DTYPES = [
    ("bool", "|b1"), ("int8", "|i1"), ("uint8", "|u1"), ("int16", "<i2"), ("int16be", ">i2"), ("uint16", "<u2"),
    ("int32", "<i4"), ("uint32be", ">u4"), ("int64", "<i8"), ("uint64", "<u8"), ("float16", "<f2"),
    ("float32", "<f4"), ("float32be", ">f4"), ("float64", "<f8"), ("float64be", ">f8"), ("complex64", "<c8"),
    ("complex128be", ">c16"), ("bytes4", "|S4"), ("unicode3", "<U3"), ("datetime_ns", "<M8[ns]"),
    ("timedelta_s", "<m8[s]"), ("record", [("a", "<i4"), ("b", "<f8")]),
]


def values(dtype, shape):
    """Deterministic values of every kind (negative, fractional, NaN where it exists)."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape))
    i = np.arange(n)
    if dtype.fields is not None:
        out = np.zeros(n, dtype=dtype)
        out["a"] = i - 7
        out["b"] = i / 4.0
    elif dtype.kind == "b":
        out = (i % 3 == 0)
    elif dtype.kind in "iu":
        info = np.iinfo(dtype)
        out = np.where(i % 5 == 0, info.max, np.where(i % 7 == 0, info.min, i))
    elif dtype.kind == "f":
        out = (i - 10) / 8.0
        out[3] = np.nan
        out[4] = -np.inf
    elif dtype.kind == "c":
        out = (i - 10) / 8.0 + 1j * (i / 3.0)
    elif dtype.kind == "S":
        out = np.array([("b%d" % k).encode("ascii") for k in i])
    elif dtype.kind == "U":
        out = np.array([u"\u00e9%d" % (k % 100) for k in i])
    elif dtype.kind == "M":
        out = np.datetime64("2016-05-01T00:00:00", "ns") + (i * 3600 * 10 ** 9).astype("m8[ns]")
    else:  # m
        out = (i * 61 - 5).astype("m8[s]")
    return np.asarray(out).astype(dtype).reshape(shape)


class Manifest(object):
    def __init__(self, root):
        self.root = root
        self.entries = []
        os.makedirs(os.path.join(root, "expected"))

    def add(self, path, array, **written_with):
        name = path.replace("/", "__")
        np.save(os.path.join(self.root, "expected", name + ".npy"), array[...])
        self.entries.append(dict(path=path, expected=name + ".npy", attributes=dict(array.attrs),
                                 **written_with))

    def save(self, extra):
        doc = dict(extra, arrays=self.entries)
        with open(os.path.join(self.root, "expected", "manifest.json"), "w") as f:
            json.dump(doc, f, indent=1, sort_keys=True)


def fresh(name):
    root = os.path.join(HERE, name)
    if os.path.exists(root):
        shutil.rmtree(root)
    os.makedirs(root)
    return root


def write_partly(a, data):
    """Write all but the last chunk row, so that the fill value shows (never-written chunks)."""
    rows = (data.shape[0] - 1) // a.chunks[0] * a.chunks[0] if data.ndim else 0
    if data.ndim and rows:
        a[:rows] = data[:rows]
    else:
        a[...] = data


def make_v1():
    root = fresh("v1")
    manifest = Manifest(root)
    shape, chunks = (7, 5), (3, 2)

    def create(name, dtype, compression="default", opts=None, fill=None, order="C", shp=shape, chk=chunks,
               attrs=None, partly=False, region=None):
        path = os.path.join(root, name)
        a = zarr.open(path, mode="w", shape=shp, chunks=chk, dtype=dtype, compression=compression,
                      compression_opts=opts, fill_value=fill, order=order)
        data = values(dtype, shp)
        if region is not None:  # a write of part of some chunks (the case of issue 43)
            a[region] = values(dtype, data[region].shape)
        elif partly:
            write_partly(a, data)
        else:
            a[...] = data
        if attrs:
            a.attrs.update(attrs)
        manifest.add(name, a, compression=a.compression, compression_opts=a.compression_opts, order=order)

    for name, dtype in DTYPES:
        if np.dtype(dtype).kind in "Mm":
            continue  # zarr 1.1.0's compressors take no datetime buffers: it cannot write these
        fill = None if np.dtype(dtype).fields is not None or np.dtype(dtype).kind in "SU" else 0
        create("dtype_" + name, dtype, fill=fill)
    for name, compression, opts in [
        ("none", "none", None), ("zlib", "zlib", 1), ("gzip_alias", "gzip", 9), ("bz2", "bz2", 3),
        ("lzma", "lzma", dict(preset=1)), ("blosc_zstd_bitshuffle", "blosc", dict(cname="zstd", clevel=3, shuffle=2)),
        ("blosc_zlib_noshuffle", "blosc", dict(cname="zlib", clevel=1, shuffle=0)),
        ("blosc_default", "blosc", None),
    ]:
        create("compression_" + name, "<f8", compression, opts)
    create("order_F_int32", "<i4", order="F", fill=0)
    # every compressor x order, in shapes with partial edge chunks: zarr 1.1.0 stores C-order bytes
    # (ndarray.tobytes()) with every compressor but blosc, which compresses the chunk's memory layout
    layouts = [("none", "none", None), ("zlib", "zlib", 1), ("gzip", "gzip", 6), ("bz2", "bz2", 1),
               ("lzma", "lzma", dict(preset=1))]
    layouts += [("blosc_" + cname, "blosc", dict(cname=cname, clevel=5, shuffle=(1, 2, 0)[k % 3]))
                for k, cname in enumerate(zarr.blosc.list_compressors())]
    for name, compression, opts in layouts:
        for order in "CF":
            create("layout_%s_%s" % (name, order), "<u2", compression, opts, fill=7, order=order, shp=(5, 6),
                   chk=(3, 4), region=(slice(1, 4), slice(2, 5)))
            create("layout_%s_%s_3d" % (name, order), "<f8", compression, opts, fill=-1.5, order=order,
                   shp=(7, 5, 70), chk=(3, 2, 32), partly=True)  # chunks large enough for blosc to compress
    create("order_F_3d_float64be", ">f8", order="F", shp=(4, 5, 6), chk=(3, 2, 4), fill=0)
    create("fill_nan_partial", "<f8", fill=float("nan"), partly=True)
    create("fill_int_partial", "<i2", fill=-7, partly=True, compression="zlib", opts=5)
    create("fill_inf_partial_F", "<f4", fill=float("-inf"), partly=True, order="F")
    create("one_dim", "<u4", shp=(11,), chk=(4,), fill=3, partly=True)
    create("attributes", "<i4", fill=0, attrs={"title": u"caf\u00e9", "scale": 0.5, "flags": [1, 2, 3],
                                                 "nested": {"a": None, "b": True}})
    manifest.save(dict(writer="zarr " + zarr.__version__, python=sys.version.split()[0],
                       numpy=np.__version__))


def make_draft():
    from numcodecs import BZ2, LZ4, LZMA, Blosc, Delta, GZip, VLenUTF8, Zlib, Zstd

    root = fresh("v3draft")
    manifest = Manifest(root)
    store_path = os.path.join(root, "store.zr3")
    g = zarr.open_group(store_path, mode="w", zarr_version=3)
    g.attrs.update({"title": "draft fixtures", "version": 3})
    shape, chunks = (7, 5), (3, 2)

    def create(path, dtype, compressor="default", fill=0, order="C", shp=shape, chk=chunks, attrs=None,
               partly=False, data=None, **kw):
        a = g.create_dataset(path, shape=shp, chunks=chk, dtype=dtype, compressor=compressor,
                             fill_value=fill, order=order, **kw)
        data = values(dtype, shp) if data is None else data
        if partly:
            write_partly(a, data)
        else:
            a[...] = data
        if attrs:
            a.attrs.update(attrs)
        manifest.add(path, a, compressor=repr(a.compressor), order=order)

    for name, dtype in DTYPES:
        fill = None if np.dtype(dtype).fields is not None or np.dtype(dtype).kind in "SUMm" else 0
        create("dtypes/" + name, dtype, fill=fill)
    for name, compressor in [
        ("none", None), ("gzip", GZip(level=5)), ("zlib", Zlib(level=1)), ("bz2", BZ2(level=3)),
        ("lz4", LZ4(acceleration=2)), ("lzma", LZMA(preset=1)), ("zstd", Zstd(level=4)),
        ("blosc_lz4_shuffle", Blosc(cname="lz4", clevel=5, shuffle=Blosc.SHUFFLE)),
        ("blosc_zstd_bitshuffle", Blosc(cname="zstd", clevel=3, shuffle=Blosc.BITSHUFFLE)),
    ]:
        create("compressors/" + name, "<f8", compressor)
    create("layout/order_F", "<i4", order="F")
    create("layout/order_F_3d_be", ">f8", order="F", shp=(4, 5, 6), chk=(3, 2, 4))
    create("layout/dot_separator", "<u2", dimension_separator=".")
    create("layout/one_dim", "<i8", shp=(11,), chk=(4,), fill=-1, partly=True)
    create("fill/nan_partial", "<f8", fill=float("nan"), partly=True)
    create("fill/int_partial", "<i2", fill=-7, partly=True)
    create("filters/delta", "<i4", filters=[Delta(dtype="<i4")], compressor=Zlib(level=1))
    obj = np.array([u"a", u"bb", u"", u"\u00e9t\u00e9"] * 9, dtype=object)[:35].reshape(shape)
    create("filters/vlen_utf8", object, object_codec=VLenUTF8(), fill=None, data=obj)
    create("deep/er/nested", "<f4", attrs={"_ARRAY_DIMENSIONS": ["y", "x"], "units": "K"})
    sub = g.require_group("deep")
    sub.attrs["description"] = u"an explicit group with attributes"
    # an implicit group: an array whose parent has no group document
    a = zarr.open_array(store_path, mode="w", path="implicit/child", shape=(6,), chunks=(4,), dtype="<i4",
                        zarr_version=3, fill_value=0)
    a[...] = np.arange(6, dtype="<i4") * 3
    manifest.add("implicit/child", a, compressor=repr(a.compressor), order="C")
    manifest.save(dict(writer="zarr " + zarr.__version__, python=sys.version.split()[0], numpy=np.__version__,
                       store="store.zr3", groups={"": dict(g.attrs), "deep": dict(sub.attrs)}))


def make_v2_structs():
    root = fresh("v2structs")
    manifest = Manifest(root)
    nested = [("n", [("z", "S4"), ("w", "<i2")]), ("v", "<f8", (2,))]
    swapped = [("t", ">u4"), ("inner", [("a", ">i2"), ("b", ">f4", (2, 2))])]

    def fields_of(dtype, n):
        out = np.zeros(n, dtype=dtype)
        for k, name in enumerate(dtype.names):
            part = out[name]
            if part.dtype.names is not None:
                out[name] = fields_of(part.dtype, n)
            else:
                base = np.arange(part.size).reshape(part.shape) * (k + 1) - 3
                out[name] = base.astype(part.dtype) if part.dtype.kind != "S" else [b"s%d" % i for i in range(n)]
        return out

    for name, fields, fill, partly in [("nested", nested, None, False), ("nested_fill", nested, 7, True),
                                       ("nested_bigendian", swapped, None, False)]:
        dtype = np.dtype(fields)
        path = os.path.join(root, name)
        a = zarr.open(path, mode="w", shape=(5,), chunks=(2,), dtype=dtype,
                      fill_value=None if fill is None else np.frombuffer(bytes([fill]) * dtype.itemsize, dtype)[0])
        data = fields_of(dtype, 5)
        if partly:
            write_partly(a, data)
        else:
            a[...] = data
        manifest.add(name, a, compressor=repr(a.compressor), order="C")
    manifest.save(dict(writer="zarr " + zarr.__version__, python=sys.version.split()[0], numpy=np.__version__))


if __name__ == "__main__":
    if zarr.__version__.startswith("1."):
        make_v1()
    elif os.environ.get("ZARR_V3_EXPERIMENTAL_API") == "1":
        make_draft()
    elif zarr.__version__.startswith("2."):
        make_v2_structs()
    else:
        sys.exit("run with zarr 1.x, or zarr 2.11-2.18 (with ZARR_V3_EXPERIMENTAL_API=1 for the draft; see the "
                 "docstring)")

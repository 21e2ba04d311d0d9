"""Writes Parquet files the way other tools write them, from the shipped CPU data.

Usage: python make_files.py OUT_DIR [DATA_TSV_GZ]

Writes under OUT_DIR (each a dataset directory the Rust interop tests read and
compare, value by value, with the same rows converted by kapprox itself):

  pyarrow_<codec>/       pyarrow, one codec each (none, snappy, gzip, zstd, lz4,
                         brotli), 1000-row row groups, dictionary encoding on
  pyarrow_v2/            data page v2, dictionary encoding, two shards
  pyarrow_types/         every integer width (signed and unsigned), float16,
                         float32, decimal128, boolean, dictionary-encoded
                         integers, nullable columns with nulls
  polars/                polars with its defaults (zstd), if polars is installed
  duckdb/                DuckDB's COPY ... (FORMAT parquet), if duckdb is installed
  spark/                 a Spark-layout directory: region=a/, region=b/ hive
                         partitions, _SUCCESS, .crc files, _committed_ marker,
                         _temporary/ with a stray file, long part file names
  mixed_train/, mixed_test/
                         string id, 5-value string categorical, nullable float,
                         timestamp, numeric x, target; the test table has a
                         category never seen in training

Prints one line per dataset written and "skipped <name>: <reason>" for the
ones a missing package prevents. Needs pyarrow; polars and duckdb are optional.
"""

import gzip
import os
import sys


def read_tsv(path):
    with gzip.open(path, "rt") as f:
        header = f.readline().rstrip("\n").split("\t")
        rows = [[float(v) for v in line.rstrip("\n").split("\t")] for line in f if line.strip()]
    return header, rows


def main():
    out = sys.argv[1]
    here = os.path.dirname(os.path.abspath(__file__))
    default = os.path.join(here, "..", "..", "..", "..", "data", "cpu_rks_train.tsv.gz")
    data = sys.argv[2] if len(sys.argv) > 2 else default
    import pyarrow as pa
    import pyarrow.parquet as pq

    header, rows = read_tsv(data)
    columns = {name: [r[j] for r in rows] for j, name in enumerate(header)}
    table = pa.table({name: pa.array(v, pa.float64()) for name, v in columns.items()})
    n = table.num_rows

    def write(name, tbl, file="part-00000.parquet", **kw):
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        pq.write_table(tbl, os.path.join(d, file), **kw)

    for codec in ["none", "snappy", "gzip", "zstd", "lz4", "brotli"]:
        write(f"pyarrow_{codec}", table, compression=codec, row_group_size=1000, use_dictionary=True)
        print(f"wrote pyarrow_{codec}")

    half = n // 2
    write("pyarrow_v2", table.slice(0, half), file="part-00000.parquet",
          data_page_version="2.0", use_dictionary=True, row_group_size=700, compression="zstd")
    write("pyarrow_v2", table.slice(half), file="part-00001.parquet",
          data_page_version="2.0", use_dictionary=True, row_group_size=700, compression="snappy")
    print("wrote pyarrow_v2")

    # Every numeric type; values are small integers or exact binary fractions
    # of the CPU columns, so each type holds them exactly.
    x1 = [int(v) for v in columns["x1"]]      # small non-negative integers
    x10 = columns["x10"]
    nulls = [None if i % 7 == 3 else v for i, v in enumerate(x10)]
    types = pa.table({
        "i8": pa.array([v % 100 - 50 for v in x1], pa.int8()),
        "i16": pa.array([v * 3 - 100 for v in x1], pa.int16()),
        "i32": pa.array([v * 1000 for v in x1], pa.int32()),
        "i64": pa.array([v * 10**12 for v in x1], pa.int64()),
        "u8": pa.array([v % 200 for v in x1], pa.uint8()),
        "u16": pa.array([v * 7 for v in x1], pa.uint16()),
        "u32": pa.array([v * 100000 for v in x1], pa.uint32()),
        "u64": pa.array([v * 10**15 for v in x1], pa.uint64()),
        "f16": pa.array([float(v % 64) / 4 for v in x1], pa.float16()),
        "f32": pa.array([float(v) / 8 for v in x1], pa.float32()),
        "dec": pa.array([__import__("decimal").Decimal(v) / 8 for v in x1], pa.decimal128(12, 3)),
        "flag": pa.array([v % 2 == 1 for v in x1], pa.bool_()),
        "dict_i": pa.array([v % 5 for v in x1], pa.int32()).dictionary_encode(),
        "nullable": pa.array(nulls, pa.float64()),
        "target": pa.array(columns["target"], pa.float64()),
    })
    write("pyarrow_types", types, row_group_size=2000)
    print("wrote pyarrow_types")

    try:
        import polars as pl
        d = os.path.join(out, "polars")
        os.makedirs(d, exist_ok=True)
        pl.from_arrow(table).write_parquet(os.path.join(d, "data.parquet"))
        print("wrote polars")
    except ImportError as e:
        print(f"skipped polars: {e}")

    try:
        import duckdb
        d = os.path.join(out, "duckdb")
        os.makedirs(d, exist_ok=True)
        con = duckdb.connect()
        con.register("t", table)
        con.execute(f"COPY (SELECT * FROM t) TO '{os.path.join(d, 'data.parquet')}' (FORMAT parquet)")
        print("wrote duckdb")
    except ImportError as e:
        print(f"skipped duckdb: {e}")

    # Spark layout: hive partitions (contiguous halves, so that path order is
    # row order), markers and checksums that a reader must ignore.
    spark = os.path.join(out, "spark")
    for region, part in [("a", table.slice(0, half)), ("b", table.slice(half))]:
        d = os.path.join(spark, f"region={region}")
        os.makedirs(d, exist_ok=True)
        name = "part-00000-1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901.c000.snappy.parquet"
        pq.write_table(part, os.path.join(d, name), compression="snappy", row_group_size=1500)
        with open(os.path.join(d, f".{name}.crc"), "wb") as f:
            f.write(b"crc\x00\x01")
    for marker in ["_SUCCESS", "_committed_123", "_started_123"]:
        open(os.path.join(spark, marker), "w").close()
    tmp = os.path.join(spark, "_temporary", "0")
    os.makedirs(tmp, exist_ok=True)
    pq.write_table(table.slice(0, 10), os.path.join(tmp, "part-99999.parquet"))
    print("wrote spark")

    # Mixed table (acceptance 2 of issue 12).
    import datetime
    cats = ["red", "green", "blue", "cyan", "gold"]
    base = datetime.datetime(2024, 1, 1)
    m = 2000

    def mixed(lo, hi, cat_of):
        return pa.table({
            "id": pa.array([f"r{i:06d}" for i in range(lo, hi)], pa.string()),
            "cat": pa.array([cat_of(i) for i in range(lo, hi)], pa.string()),
            "x": pa.array([None if i % 11 == 5 else columns["x3"][i] for i in range(lo, hi)], pa.float64()),
            "x2": pa.array([columns["x4"][i] for i in range(lo, hi)], pa.float64()),
            "ts": pa.array([base + datetime.timedelta(minutes=i) for i in range(lo, hi)], pa.timestamp("us")),
            "target": pa.array([columns["target"][i] for i in range(lo, hi)], pa.float64()),
        })

    write("mixed_train", mixed(0, m, lambda i: cats[(i * 7) % 5]), compression="zstd", row_group_size=500)
    write("mixed_test", mixed(m, m + 100, lambda i: "violet" if i % 10 == 0 else cats[i % 5]), compression="zstd")
    print("wrote mixed")


if __name__ == "__main__":
    main()

"""Type stubs of the Rust extension ``kapprox._native``."""

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

DEFAULT_REL_TOL: float
DEFAULT_GRIDS: int

class FeatureMap:
    """A fitted kapprox feature map; pickles as its spec and learned tensors."""

    def __new__(cls, spec_json: str, tensors: dict[str, npt.NDArray[np.float64]]) -> FeatureMap: ...
    def __getnewargs__(self) -> tuple[str, dict[str, npt.NDArray[np.float64]]]: ...
    @property
    def n_input(self) -> int: ...
    @property
    def n_output(self) -> int: ...
    @property
    def is_sparse(self) -> bool: ...
    @property
    def name(self) -> str: ...
    @property
    def spec_json(self) -> str: ...
    @property
    def sigma(self) -> float | None: ...
    @property
    def parameter_bytes(self) -> int: ...
    def tensors(self) -> dict[str, npt.NDArray[np.float64]]: ...
    def transform(self, x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]: ...
    def transform_f32(self, x: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]: ...
    def transform_csr(
        self, x: npt.NDArray[np.float64], single: bool = False
    ) -> tuple[npt.NDArray[np.floating], npt.NDArray[np.integer], npt.NDArray[np.int64]]: ...

class Statistics:
    """Ridge statistics per bandwidth candidate and split part."""

    def __new__(
        cls,
        config_json: str,
        maps: Sequence[FeatureMap],
        grams: Sequence[Sequence[npt.NDArray[np.float64]]] | None = None,
        rows: Sequence[tuple[int, int]] | None = None,
    ) -> Statistics: ...
    @property
    def n_rows(self) -> int: ...
    @property
    def row_ranges(self) -> list[tuple[int, int]]: ...
    @property
    def next_row(self) -> int: ...
    @property
    def maps(self) -> list[FeatureMap]: ...
    @property
    def statistics_bytes(self) -> int: ...
    def update(self, x: npt.NDArray[np.float64], y: npt.NDArray[np.float64], row_offset: int) -> None: ...
    def merged(self, other: Statistics) -> Statistics: ...
    def solve(self, alphas: Sequence[float] | None = None) -> dict: ...

def independent_map(
    kind: str,
    kernel: str,
    sigma: float,
    n_input: int,
    n_components: int,
    seed: int,
    *,
    nu: float | None = None,
    form: str | None = None,
    n_grids: int | None = None,
    n_inner: int | None = None,
) -> FeatureMap: ...
def nystrom_map(
    kernel: str,
    sigma: float,
    x: npt.NDArray[np.float64],
    n_landmarks: int,
    seed: int,
    *,
    nu: float | None = None,
    rel_tol: float = ...,
) -> tuple[FeatureMap, list[int]]: ...
def tefm_map(
    base: str,
    sketch: str,
    kernel: str,
    sigma: float,
    x: npt.NDArray[np.float64],
    n_components: int,
    sketch_features: int,
    power: int,
    seed: int,
    *,
    nu: float | None = None,
    form: str | None = None,
) -> FeatureMap: ...
def eof_map(
    kernel: str,
    omega: float,
    n_input: int,
    seed: int,
    *,
    n_components: int | None = None,
    level: int | None = None,
    basis: str = "centred",
    subset: str = "nested",
) -> FeatureMap: ...
def fit_scaler(kind: str, x: npt.NDArray[np.float64]) -> str: ...
def median_distance(x: npt.NDArray[np.float64], seed: int) -> float: ...
def split_parts(split_json: str, seed: int, first_row: int, n: int) -> list[int]: ...

"""The adversarial server: the public state that pulls two neighbouring users' messages apart
(``privbandits audit --adversarial``, see :mod:`privbandits.auditing`).
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from privbandits.algorithms.audit import ClientPathCase, UserData, extreme_pairs, extremes
from privbandits.algorithms.base import Algorithm, LocalAlgorithm
from privbandits.algorithms.calibration import CalibrationWarning
from privbandits.auditing.catalogue import CLIENT_PATHS
from privbandits.auditing.client_path import PILOT_ENTROPY, client_path_spec
from privbandits.core.convex import ConvexSpec
from privbandits.core.errors import UnknownNameError, ValidationError
from privbandits.core.public_space import PublicStateError, dims_of
from privbandits.core.rng import make_streams
from privbandits.core.spec import EnvSpec
from privbandits.engine import protocol
from privbandits.envs import SyntheticEnv
from privbandits.privacy.audit import audit_spec
from privbandits.privacy.device import whitened_distance
from privbandits.privacy.inputs import check_device_inputs

# ============================================================================================
# the adversarial server: the public state that pulls two neighbouring users' messages apart
# ============================================================================================
#: Relative slack of the sensitivity comparison (float rounding of the encoded messages).
SENSITIVITY_RTOL = 1e-9


@dataclass(frozen=True)
class WorstCase:
    """The most distinguishing public state and neighbouring pair an adversarial search found.

    Attributes
    ----------
    algorithm : str
        The audited device.
    public : dict of str to ndarray
        One user's public state (per-user fields with a leading axis of length 1), a member of the
        device's declared public-state space.
    pair : tuple of UserData
        The neighbouring users (own contexts, arm and reward) at that state.
    reached : float
        ``whitened_distance(encode(D), encode(D'), noise.scale, sensitivity.norm)`` there.
    bound : float
        The device's accounted bound ``sensitivity().bound``.
    norm : str
        The norm of the sensitivity.
    evaluated : int
        Number of (public state, pair) points the search evaluated.
    """

    algorithm: str
    public: dict[str, np.ndarray]
    pair: tuple[UserData, UserData]
    reached: float
    bound: float
    norm: str
    evaluated: int

    @property
    def holds(self) -> bool:
        """The accounted sensitivity holds at every point evaluated."""
        return bool(self.reached <= self.bound * (1.0 + SENSITIVITY_RTOL))

    def summary(self) -> str:
        """One line describing the public state (small arrays in full, large ones by range)."""
        return "; ".join(f"{k} = {_describe_array(v)}" for k, v in self.public.items()) or "(empty)"


def _describe_array(v: np.ndarray) -> str:
    a = np.asarray(v)
    if a.size <= 6:
        return str(
            np.round(a.astype(float), 4)
            .reshape(a.shape[1:] if a.ndim and a.shape[0] == 1 else a.shape)
            .tolist()
        )
    text = f"shape {a.shape[1:] if a.shape[0] == 1 else a.shape}, entries in [{a.min():.4g}, {a.max():.4g}]"
    if a.ndim >= 2 and a.dtype.kind == "f":
        text += (
            f", largest row norm {float(np.sqrt(np.max(np.einsum('...i,...i->...', a, a)))):.4g}"
        )
    return text


class _Points:
    """A batch of ``n`` (public state, neighbouring pair) points, one per replication row."""

    def __init__(
        self,
        public: dict[str, np.ndarray],
        X0: np.ndarray,
        a0: np.ndarray,
        y0: np.ndarray,
        X1: np.ndarray,
        a1: np.ndarray,
        y1: np.ndarray,
    ) -> None:
        self.public, self.X0, self.a0, self.y0, self.X1, self.a1, self.y1 = (
            public,
            X0,
            a0,
            y0,
            X1,
            a1,
            y1,
        )

    def row(self, j: int, per_user: set[str]) -> _Points:
        pub = {k: (v[j : j + 1] if k in per_user else v) for k, v in self.public.items()}
        return _Points(
            pub,
            self.X0[j : j + 1],
            self.a0[j : j + 1],
            self.y0[j : j + 1],
            self.X1[j : j + 1],
            self.a1[j : j + 1],
            self.y1[j : j + 1],
        )

    def tile(self, n: int, per_user: set[str]) -> _Points:
        def rep(v: np.ndarray) -> np.ndarray:
            return np.repeat(v, n, axis=0)

        pub = {k: (rep(v) if k in per_user else v.copy()) for k, v in self.public.items()}
        return _Points(
            pub, rep(self.X0), rep(self.a0), rep(self.y0), rep(self.X1), rep(self.a1), rep(self.y1)
        )


class AdversarialServer:
    """Search a device's declared public-state space for the state that maximizes the whitened
    distance of two neighbouring users' encoded messages (the device's own sensitivity).

    The device contract (:class:`privbandits.algorithms.base.Client`: ``public_space``, ``encode``,
    ``noise``, ``sensitivity``) is read on a fresh reset of ``alg`` with ``n`` users, one point
    (public state, neighbouring pair) per user: the honest broadcast, random and extreme members
    of the space (:meth:`privbandits.core.public_space.PublicSpace.draw`), then a hill climb from
    the best point found (perturb the public state, the users' contexts within the norm bound and
    their rewards; keep what increases the distance).  The users' arms are the device's own choice
    (``Client.choose``) with the same policy randomness for both users of a pair.

    Parameters
    ----------
    alg : LocalAlgorithm
        A constructed local or shuffle algorithm (reset here).
    spec : EnvSpec
        The problem.
    pairs : sequence of (UserData, UserData), optional
        Seed pairs (default :func:`extreme_pairs`); random users on the norm bound with rewards
        outside the declared range are added.
    n : int
        Points per batch.
    seed : int
        Seed of the search.
    t : int
        The round the users take part in.
    """

    def __init__(
        self,
        alg: Algorithm,
        spec: EnvSpec,
        pairs: Sequence[tuple[UserData, UserData]] | None = None,
        *,
        n: int = 64,
        seed: int = 0,
        t: int = 0,
    ) -> None:
        if not isinstance(alg, LocalAlgorithm):
            raise ValidationError(
                f"{getattr(alg, 'name', type(alg).__name__)} is not a local or shuffle "
                "algorithm: it has no device"
            )
        self.alg, self.spec, self.n, self.t = alg, spec, int(n), int(t)
        self.rng = np.random.default_rng(
            np.random.SeedSequence(PILOT_ENTROPY, spawn_key=(seed, 0xAD5))
        )
        self.convex = isinstance(spec, ConvexSpec)
        self.pairs = (
            list(pairs) if pairs is not None else ([] if self.convex else extreme_pairs(spec))
        )
        if self.convex and not self.pairs:
            raise ValidationError(
                "a loss environment needs seed pairs (the users' loss parameters and losses)"
            )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CalibrationWarning)
            alg.reset(spec, self.n, make_streams(seed))
        self.client = alg.client
        space = self.client.public_space()
        if space is None:
            raise NotImplementedError(
                f"{type(self.client).__name__} does not declare its public-state space "
                "(Client.public_space): what an adversarial server may send is unbounded"
            )
        self.space = space
        self.sens = self.client.sensitivity()
        self.dims = dims_of(spec, self.n)
        self.per_user = {f.name for f in space.fields if f.shape and f.shape[0] == "R"}
        self.evaluated = 0
        first = self.pairs[0][0] if self.pairs else self._random_user()
        X = np.ascontiguousarray(
            np.broadcast_to(first.contexts, (self.n, *np.shape(first.contexts))), dtype=float
        )
        protocol.start(alg, X)
        self.honest = {k: np.array(v) for k, v in protocol.broadcast(alg, self.t).items()}

    # -- distances ------------------------------------------------------------------------------
    def distances(self, pts: _Points) -> np.ndarray:
        """Whitened distances ``(n,)`` of the encoded messages of each row's pair; ``-inf`` for a
        row whose public state the device refuses (a check beyond the declared space)."""
        try:
            return self._distances(pts, self.dims)
        except PublicStateError:
            if pts.X0.shape[0] == 1:
                return np.array([-np.inf])
        out = np.empty(pts.X0.shape[0])
        one = dims_of(self.spec, 1)
        for j in range(out.size):  # row by row: only the refused states drop out
            row = pts.row(j, self.per_user)
            try:
                out[j] = self._distances(row, one)[0]
            except PublicStateError:
                out[j] = -np.inf
                continue
            pts.a0[j], pts.a1[j] = row.a0[0], row.a1[0]
        return out

    def _distances(self, pts: _Points, dims: Mapping[str, int]) -> np.ndarray:
        state = self.space.validate(pts.public, dims)
        # the arms are the device's own choice from the public state and the user's contexts, with
        # the same policy randomness for both users (a coupling: DP of the mixture over it follows)
        policy_seed = int(self.rng.integers(2**62))
        enc, scales = [], []
        for side, (X, y) in enumerate(((pts.X0, pts.y0), (pts.X1, pts.y1))):
            act = np.asarray(
                self.client.choose(self.t, state, X, np.random.default_rng(policy_seed))
            )
            if not self.convex:
                X, act, y = check_device_inputs(self.spec, X, act, y)  # type: ignore[assignment]
                (pts.a0 if side == 0 else pts.a1)[:] = act
            e = np.asarray(self.client.encode(self.t, state, X, act, y), dtype=float)
            if e.ndim != 2 or e.shape[0] != X.shape[0]:
                raise ValidationError(
                    f"{type(self.client).__name__}.encode returned shape {e.shape}; expected "
                    f"({X.shape[0]}, m): one flattened message per user"
                )
            noise = self.client.noise(self.t, state, X, act)
            enc.append(e)
            scales.append(np.broadcast_to(np.asarray(noise.scale, dtype=float), e.shape))
        self.evaluated += pts.X0.shape[0]
        norm = self.sens.norm
        # the larger of the two whitenings: noise that depended on the user would be caught here
        return np.maximum(
            whitened_distance(enc[0], enc[1], scales[0], norm),
            whitened_distance(enc[0], enc[1], scales[1], norm),
        )

    # -- candidate points -----------------------------------------------------------------------
    def _random_user(self) -> UserData:
        spec, rng = self.spec, self.rng
        B = float(spec.context_bound)
        shape = (spec.d,) if spec.setting == "multi" else (spec.K, spec.d)
        x = rng.standard_normal(shape)
        if rng.random() < 0.5 and len(shape) == 2:
            x[:] = x[0]
        x *= B / np.linalg.norm(x, axis=-1, keepdims=True)
        y_hi, y_lo = extremes(spec)
        return UserData(x, float(rng.choice([y_hi, y_lo])), "random")

    def _users(self) -> _Points:
        """One pair per row: the seed pairs (arms drawn at random) and random users on the bound."""
        n = self.n
        rows = []
        for j in range(n):
            if self.pairs and (j % 2 == 0 or self.convex):
                d0, d1 = self.pairs[(j // 2) % len(self.pairs)]
            else:
                d0, d1 = self._random_user(), self._random_user()
            rows.append((d0, d1))
        X0 = np.stack([np.asarray(r[0].contexts, dtype=float) for r in rows])
        X1 = np.stack([np.asarray(r[1].contexts, dtype=float) for r in rows])
        y0 = np.stack([np.asarray(r[0].reward, dtype=float) for r in rows])
        y1 = np.stack([np.asarray(r[1].reward, dtype=float) for r in rows])
        return _Points({}, X0, np.zeros(n, dtype=np.int64), y0, X1, np.zeros(n, dtype=np.int64), y1)

    def _with(self, public: Mapping[str, Any]) -> _Points:
        pts = self._users()
        pts.public = {k: np.array(v) for k, v in public.items()}
        return pts

    # -- the search -----------------------------------------------------------------------------
    def search(self, rounds: int = 2, climb: int = 25) -> WorstCase:
        """Random and extreme states (``rounds`` batches of each), then ``climb`` hill-climb steps."""
        candidates = []
        names = set(self.space.names)
        if set(self.honest) == names:
            candidates.append(self._with(self.honest))
        for _ in range(rounds):
            for extreme in (False, True):
                candidates.append(self._with(self.space.draw(self.dims, self.rng, extreme)))
        best_val, best = -np.inf, None
        for pts in candidates:
            dist = self.distances(pts)
            j = int(np.argmax(dist))
            if dist[j] > best_val or best is None:
                best_val, best = float(dist[j]), pts.row(j, self.per_user)
        assert best is not None
        if best_val == -np.inf:
            raise ValidationError(
                f"{type(self.client).__name__} refused every public state drawn from the "
                "space it declares (PublicStateError): declare the space it accepts"
            )
        step = 0.3
        for _ in range(climb):
            if not math.isfinite(best_val):
                break
            props = self._perturb(best.tile(self.n, self.per_user), step)
            dist = self.distances(props)
            j = int(np.argmax(dist))
            if dist[j] > best_val * (1.0 + 1e-12):
                best_val, best = float(dist[j]), props.row(j, self.per_user)
                step = min(step * 1.5, 1.0)
            else:
                step *= 0.6
        return WorstCase(
            getattr(self.alg, "name", "") or type(self.alg).__name__,
            dict(best.public),
            self._pair(best),
            best_val,
            float(self.sens.bound),
            self.sens.norm,
            self.evaluated,
        )

    def _pair(self, p: _Points) -> tuple[UserData, UserData]:
        out = []
        for X, a, y in ((p.X0, p.a0, p.y0), (p.X1, p.a1, p.y1)):
            x, r = X[0].copy(), y[0].copy() if np.ndim(y[0]) else float(y[0])
            norm = float(np.max(np.linalg.norm(np.atleast_2d(x), axis=-1)))
            label = (
                f"contexts of norm {norm:.4g}"
                + ("" if self.convex else f", arm {int(a[0])}")
                + f", reward {np.round(r, 4).tolist() if np.ndim(r) else round(float(r), 4)}"
            )
            # the arm the device chose at this state (with the pair's shared policy randomness): the
            # audit conditions on it, as the accounting covers every (x, a, r) of a user
            out.append(UserData(x, r, label, None if self.convex else int(a[0])))
        return out[0], out[1]

    def _perturb(self, p: _Points, step: float) -> _Points:
        rng, n = self.rng, self.n
        pub = {}
        for f in self.space.fields:
            v = np.array(p.public[f.name])
            pub[f.name] = _perturb_field(f, v, step, rng, f.name in self.per_user)
        B = float(self.spec.context_bound)
        X0, X1 = p.X0.copy(), p.X1.copy()
        y0, y1 = p.y0.copy(), p.y1.copy()
        if not self.convex:
            for X in (X0, X1):
                X += step * B * rng.standard_normal(X.shape)
                nrm = np.linalg.norm(X, axis=-1, keepdims=True)
                X *= np.minimum(1.0, B * (1 - 1e-12) / np.maximum(nrm, 1e-300))
        y_hi, y_lo = extremes(self.spec)
        for y in (y0, y1):
            if self.convex:
                y += step * (np.abs(y) + 1.0) * rng.standard_normal(y.shape)
            else:
                flip = rng.random(n) < 0.15
                y[flip] = rng.choice(
                    np.array([y_hi, y_lo, *self.spec.reward_range, 0.0]), size=int(flip.sum())
                )
        return _Points(pub, X0, p.a0.copy(), y0, X1, p.a1.copy(), y1)


def _perturb_field(
    f: Any, v: np.ndarray, step: float, rng: np.random.Generator, per_user: bool
) -> np.ndarray:
    """A random move of a public field that stays in its declared range (projected back)."""
    if f.values is not None:
        flip = rng.random(v.shape) < 0.2 * min(step * 3, 1.0)
        out = v.copy()
        out[flip] = rng.choice(np.asarray(f.values, dtype=np.int64), size=int(flip.sum()))
        return out
    lo = -1e6 if f.low is None else f.low
    hi = 1e6 if f.high is None else f.high
    if f.kind == "i":
        w = max(1.0, step * (hi - lo) / 2) if math.isfinite(hi - lo) else 1.0
        return np.clip(
            np.round(v + w * rng.standard_normal(v.shape)), math.ceil(lo), math.floor(hi)
        ).astype(np.int64)
    width = (hi - lo) / 2 if (f.low is not None and f.high is not None) else (f.norm or 1.0)
    x = v + step * (np.abs(v) + width) * rng.standard_normal(v.shape)
    if f.psd_floor is not None:
        x = (x + np.swapaxes(x, -1, -2)) / 2
        w_, Q = np.linalg.eigh(x)
        w_ = np.clip(w_, f.psd_floor, min(hi, 1e6))
        x = np.einsum("...ij,...j,...kj->...ik", Q, w_, Q)
        return np.ascontiguousarray((x + np.swapaxes(x, -1, -2)) / 2)
    x = np.clip(x, lo, hi)
    if f.symmetric:
        x = (x + np.swapaxes(x, -1, -2)) / 2
    if f.norm is not None:
        nrm = np.sqrt(np.einsum("...i,...i->...", x, x))[..., None]
        x = x * np.minimum(1.0, f.norm * (1 - 1e-12) / np.maximum(nrm, 1e-300))
    return np.ascontiguousarray(x, dtype=float)


def worst_public_state(
    alg: Algorithm,
    spec: EnvSpec,
    pairs: Sequence[tuple[UserData, UserData]] | None = None,
    *,
    n: int = 64,
    rounds: int = 2,
    climb: int = 25,
    seed: int = 0,
) -> WorstCase:
    """The public state (and neighbouring pair) maximizing a device's encoded distance.

    See :class:`AdversarialServer`.  Raises ``NotImplementedError`` when the device does not
    implement its contract (``encode`` / ``noise`` / ``sensitivity``).
    """
    return AdversarialServer(alg, spec, pairs, n=n, seed=seed).search(rounds, climb)


@dataclass(frozen=True)
class AdversarialAudit:
    """One row of ``privbandits audit --adversarial``.

    Attributes
    ----------
    name : str
        Client-path entry (``client:<algorithm>``).
    worst_state : str
        Summary of the worst public state found.
    reached : float
        Sensitivity reached there (whitened distance of the neighbours' encoded messages).
    accounted : float
        The device's accounted sensitivity.
    claimed_epsilon : float
        The claim audited.
    audited_epsilon_lb : float
        Audited lower bound at that state (must not exceed the claim).
    twin_epsilon_lb : float
        Audited lower bound of the half-noise twin (must exceed the claim).
    twin_flagged : bool
        The twin's audit detected the violation.
    passed : bool
        Sensitivity held, the audit passed and the twin was flagged.
    notes : str
        The search, the pair, both audits' notes, or why the device could not be audited.
    """

    name: str
    worst_state: str
    reached: float
    accounted: float
    claimed_epsilon: float
    audited_epsilon_lb: float
    twin_epsilon_lb: float
    twin_flagged: bool
    passed: bool
    notes: str = ""


def _failed(name: str, why: str) -> AdversarialAudit:
    nan = float("nan")
    return AdversarialAudit(name, "-", nan, nan, nan, nan, nan, False, False, why)


def adversarial_audit(
    name: str | ClientPathCase,
    n_samples: int | None = None,
    seed: int = 0,
    *,
    alpha: float = 0.05,
    twin: float = 0.5,
    search: Mapping[str, int] | None = None,
) -> AdversarialAudit:
    """Audit one client path at the worst public state an adversarial server can send.

    1. :func:`worst_public_state` searches the device's declared space (and the neighbouring
       users) for the largest whitened distance of the encoded messages;
    2. the client-path audit (:func:`client_path_spec`) runs at that state, with that pair, against
       the claim, and against its under-noised twin (the algorithm constructed at
       ``epsilon / twin``), which must be flagged: an audit that cannot fail is no evidence.

    A device that does not implement its contract (``public_space``, ``encode``, ``noise``,
    ``sensitivity``) fails with a note saying which method is missing.

    Parameters
    ----------
    name : str or ClientPathCase
        An entry of :data:`CLIENT_PATHS` (or its algorithm name), or a case of one's own.
    n_samples : int, optional
        Messages per neighbouring input of both audits (default: the case's own).
    seed : int
        Seed of the search and of the audits' sampling streams.
    alpha : float
        1 - confidence of the audited lower bounds.
    twin : float
        Noise factor of the twin (0.5: half the noise).
    search : mapping, optional
        Budget of the search (:func:`worst_public_state` keywords ``n``, ``rounds``, ``climb``).
    """
    if isinstance(name, ClientPathCase):
        case, name = name, f"client:{name.label}"
    else:
        if name not in CLIENT_PATHS:
            name = f"client:{name}"
        if name not in CLIENT_PATHS:
            raise UnknownNameError(
                f"no client path {name!r}; client paths: {', '.join(CLIENT_PATHS)}"
            )
        case = CLIENT_PATHS[name]
    try:
        alg = case.build(case.params)
        spec = _search_spec(case, alg)
        worst = worst_public_state(
            alg, spec, list(case.pairs(spec)), seed=seed, **dict(search or {})
        )
    except NotImplementedError as exc:
        return _failed(name, f"the device does not implement its contract: {exc}")
    except (ValidationError, PublicStateError) as exc:
        return _failed(name, f"the adversarial search could not run: {type(exc).__name__}: {exc}")
    held = worst.holds
    head = (
        f"adversarial search over the declared public-state space ({worst.evaluated} points): reached "
        f"{worst.reached:.6g} of the accounted {worst.norm} sensitivity {worst.bound:.6g} "
        f"({'holds' if held else 'EXCEEDED'}) with ({worst.pair[0].label}) vs ({worst.pair[1].label})"
    )
    if case.protocol is not None:
        ok = audit_spec(case.protocol(None), n_samples=n_samples, alpha=alpha, seed=seed)
        half = audit_spec(case.protocol(twin), n_samples=n_samples, alpha=alpha, seed=seed)
        head += "; the audited release is the protocol's (its claim does not depend on the public state)"
    else:
        public = {k: np.array(v) for k, v in worst.public.items()}
        adv = dataclasses.replace(
            case, public=lambda _spec: public, pairs=lambda _spec: [worst.pair]
        )
        ok = audit_spec(
            client_path_spec(adv, name=name), n_samples=n_samples, alpha=alpha, seed=seed
        )
        half = audit_spec(
            client_path_spec(adv, twin, name=name), n_samples=n_samples, alpha=alpha, seed=seed
        )
    flagged = not half.passed
    notes = f"{head}; audit: {ok.notes}; twin (noise x{twin:g}): {half.notes}"
    return AdversarialAudit(
        name,
        worst.summary(),
        worst.reached,
        worst.bound,
        ok.claimed_epsilon,
        ok.audited_epsilon_lb,
        half.audited_epsilon_lb,
        flagged,
        bool(held and ok.passed and flagged),
        notes,
    )


def _search_spec(case: ClientPathCase, alg: Algorithm) -> EnvSpec:
    """The case's problem, or (a protocol-level case, whose problem is the protocol's) a small
    synthetic problem with a link the algorithm supports."""
    spec = case.spec()
    links = type(alg).links
    if "*" in links or spec.link.name in links:
        return spec
    noise = {"logistic": "bernoulli", "probit": "bernoulli", "poisson": "poisson"}.get(
        links[0], "gaussian"
    )
    return SyntheticEnv(d=2, K=3, link=links[0], noise=noise).reset(
        1, make_streams(0), case.horizon
    )


def adversarial_names(algorithm: str | None = None) -> list[str]:
    """Client-path entries of ``algorithm`` (an algorithm name or ``client:`` entry; None: every one)."""
    if algorithm is None:
        return list(CLIENT_PATHS)
    if algorithm in CLIENT_PATHS:
        return [algorithm]
    names = [k for k, c in CLIENT_PATHS.items() if c.label == algorithm]
    if not names:
        raise UnknownNameError(
            f"no client path of {algorithm!r}; local and shuffle algorithms: "
            f"{', '.join(dict.fromkeys(c.label for c in CLIENT_PATHS.values()))}"
        )
    return names


def run_adversarial(
    algorithm: str | None = None,
    n_samples: int | None = None,
    seed: int = 0,
    *,
    alpha: float = 0.05,
) -> list[AdversarialAudit]:
    """``privbandits audit ALGORITHM --adversarial`` (``algorithm=None``: ``--all``)."""
    return [
        adversarial_audit(nm, n_samples, seed, alpha=alpha) for nm in adversarial_names(algorithm)
    ]

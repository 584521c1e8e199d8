"""Synthetic ERA5-like 2 m temperature on the 0.25-degree ERA5 grid (721 x 1440), 6-hourly.

NumPy only, so it runs anywhere (also where TensorStore is absent); used by
bench/make_era5_like.py to write stores and by its --check-ratios mode to measure the
compression ratios of the field with libzstd / blosc directly.

The field is built to compress like real reanalysis data, not like random numbers nor like a
smooth analytic function:

  climatology      300 - 50 sin^2(lat)
  surface pattern  a static, spatially red field with grid-scale detail (orography, land/sea)
  seasonal cycle   -12 sin(lat) cos(2 pi t / 1460)      (1460 six-hourly steps a year)
  diurnal cycle    over "land" only, following local solar time
  planetary waves  zonal wavenumbers 1-6 travelling at their own phase speeds
  weather          spatially correlated patterns that drift eastwards and slowly evolve
                   (time-correlated: consecutive steps share most of their structure)
  fine noise       small white noise, new each step

then quantised per time step like GRIB simple packing with 16 bits (what ERA5 is stored as
before it reaches Zarr): ref = min, scale = 2^E with E the smallest integer such that
(max - min) / 2^E < 65536, value = float32(ref + round((x - ref) / scale) * scale).

Every time step is a pure function of (seed, t): batches can be generated in any order, on
any number of threads, and give the same bytes.
"""

import math

import numpy as np

NLAT = 721
NLON = 1440
STEPS_PER_DAY = 4
STEPS_PER_YEAR = 1460

# Tuning knobs (amplitudes in K). Chosen so that zstd-3 gives ~1.7x and blosc-lz4 + byte
# shuffle ~1.9x on float32 chunks of one time step (see `make_era5_like.py --check-ratios`).
AMP_SURFACE = 6.0
AMP_LAND_DETAIL = 1.5
AMP_WEATHER = 4.0
AMP_PLANETARY = 3.0
AMP_DIURNAL = 5.0
AMP_SEASONAL = 12.0
AMP_FINE_NOISE = 0.02
GRIB_BITS = 16


def _red_noise(rng, k0, slope, fine=0.0):
    """A zero-mean, unit-variance field periodic in longitude with a red spectrum:
    power ~ 1 / (1 + (k/k0)^2)^(slope/2), plus `fine` times white noise (grid-scale detail)."""
    white = rng.standard_normal((NLAT, NLON))
    spec = np.fft.rfft2(white)
    ky = np.fft.fftfreq(NLAT)[:, None] * NLAT
    kx = np.fft.rfftfreq(NLON)[None, :] * NLON / 2.0  # longitude spans twice the latitude extent
    k = np.sqrt(kx * kx + ky * ky)
    spec *= (1.0 + (k / k0) ** 2) ** (-slope / 4.0)
    field = np.fft.irfft2(spec, s=(NLAT, NLON))
    field -= field.mean()
    field /= field.std()
    if fine:
        field += fine * white
        field /= field.std()
    return field


class Era5LikeTemperature:
    """Static parts are computed once (about a second); step(t) is cheap (float32 throughout,
    ~20 passes over one field) and thread-safe."""

    def __init__(self, seed=0):
        self.seed = int(seed)
        rng = np.random.default_rng([self.seed, 7919])
        lat = np.linspace(90.0, -90.0, NLAT)
        lon = np.arange(NLON) * 0.25
        lat_rad = np.deg2rad(lat)[:, None]
        lon_rad = np.deg2rad(lon)[None, :]
        sinlat = np.sin(lat_rad)
        coslat = np.cos(lat_rad)

        clim = (300.0 - 50.0 * sinlat ** 2) + AMP_SURFACE * _red_noise(rng, 8.0, 4.0)
        land = (_red_noise(rng, 6.0, 4.0) > 0.55).astype(np.float64)   # about 30 % "land"
        clim = clim + land * AMP_LAND_DETAIL * _red_noise(rng, 50.0, 3.5)  # rougher over land
        # climatology + diurnal cycle over land (maximum at 14h local solar time), one field
        # per step of the day
        self.base = []
        for h in range(STEPS_PER_DAY):
            hour_utc = h * 24.0 / STEPS_PER_DAY
            diurnal = AMP_DIURNAL * land * coslat * np.cos(lon_rad + 2 * math.pi * (hour_utc - 14.0) / 24.0)
            self.base.append((clim + diurnal).astype(np.float32))
        self.seasonal = (-AMP_SEASONAL * sinlat).astype(np.float32)                 # (NLAT, 1)
        midlat = np.exp(-((np.abs(lat[:, None]) - 50.0) / 25.0) ** 2)
        self.wave_env = (AMP_PLANETARY * midlat).astype(np.float32)                 # (NLAT, 1)
        self.lon_rad = lon_rad
        # planetary waves: wavenumber m, period in steps (sign: direction), phase, amplitude
        self.waves = [(m, rng.uniform(20, 200) * (1 if rng.random() < 0.7 else -1),
                       rng.uniform(0, 2 * math.pi), rng.uniform(0.4, 1.0)) for m in range(1, 7)]
        # weather: pairs of patterns rotated into each other over time, drifting east
        npat = 6
        env = AMP_WEATHER * (0.35 + midlat) / math.sqrt(npat / 2)
        self.patterns = [(env * _red_noise(rng, 12.0, 4.5)).astype(np.float32) for _ in range(npat)]
        # fine noise: one white field, shifted by a pseudo-random offset each step
        self.noise = (AMP_FINE_NOISE * rng.standard_normal((NLAT, NLON))).astype(np.float32)

    def raw(self, t):
        """The unquantised field at step t, float32 (NLAT, NLON)."""
        t = int(t)
        tt = float(t)
        f = self.base[t % STEPS_PER_DAY] + self.seasonal * np.float32(math.cos(2 * math.pi * tt / STEPS_PER_YEAR))
        waves = np.zeros((1, NLON))
        for m, period, phase, amp in self.waves:
            waves += amp * np.cos(m * self.lon_rad - 2 * math.pi * tt / period + phase)
        f += self.wave_env * waves.astype(np.float32)
        for i in range(0, len(self.patterns), 2):
            theta = 2 * math.pi * tt / (36.0 + 14.0 * i)             # ~9-16 day evolution
            shift = int(round(tt * (6.0 + 1.5 * i))) % NLON           # ~6-9 grid points / step
            mix = np.float32(math.cos(theta)) * self.patterns[i] + np.float32(math.sin(theta)) * self.patterns[i + 1]
            f += np.roll(mix, shift, axis=1)
        k = (t * 7919 + self.seed * 104729) % (NLAT * NLON)
        f += np.roll(self.noise.reshape(-1), k).reshape(NLAT, NLON)
        return f

    def step(self, t):
        """The quantised float32 field at step t, (NLAT, NLON)."""
        return grib_quantise(self.raw(t), GRIB_BITS)


def grib_quantise(x, bits=16):
    """GRIB simple packing with a binary scale factor (decimal scale 0), decoded to float32.

    Computed in float32: x - ref is exact for values within a factor 2 of ref (Sterbenz) and
    close enough otherwise, division and multiplication by a power of two are exact, and
    ref + q * 2^E rounds once, exactly as float32(double(ref) + q * 2^E) would."""
    x = np.asarray(x, dtype=np.float32)
    ref = np.float32(x.min())                  # GRIB stores the reference value as float32
    span = float(x.max()) - float(ref)
    levels = (1 << bits) - 1
    e = math.ceil(math.log2(span / levels)) if span > 0 else 0
    scale = np.float32(2.0 ** e)
    q = x - ref
    q *= np.float32(1.0) / scale
    np.rint(q, out=q)
    np.clip(q, 0, levels, out=q)
    q *= scale
    q += ref
    return q

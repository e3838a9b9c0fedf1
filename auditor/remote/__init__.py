"""Remote code, and sending it to another process by value.

* `workspace`: this process's scratch directory and private modules cache (`HF_MODULES_CACHE`).
* `twin`: a built-in config type written out as a local remote-code repository and loaded
  from there (`make_twin`, `load_remote_config`, `TwinError`).
* `byvalue`: cloudpickle's by-value registration of `transformers_modules` and the reducer
  that makes multiprocessing's pickler use it (`dumps_by_value`, `Parcel`).
* `ray_trip`: the same round trip through a task on a local Ray cluster.
* `user`: `--remote-code DIR`, a user's own remote-code model (`remote_cases`).

`trust_remote_code=True` is only ever passed for directories the auditor wrote itself (twins)
or that the user named with `--remote-code`; never for a Hub id, never because a config
asked for it.
"""

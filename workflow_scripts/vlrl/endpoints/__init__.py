"""The one client for OpenAI-compatible endpoints: the LLM judge (:mod:`vlrl.scoring.judge`),
the thinking reward model (:mod:`vlrl.rewards.thinking`) and the ``openai`` generation backend
(:mod:`vlrl.generation.openai`) all call their servers through :class:`EndpointClient`, with
one config (:class:`vlrl.config.EndpointConfig`), one retry policy, one cache
(:class:`EndpointCache`) and one bound on requests in flight per endpoint: ``concurrency``
holds for the endpoint (``base_url`` and model), across every client of it in the process, every
prompt version and every event loop (:mod:`vlrl.endpoints.bound`).

Every request ends as an :class:`Answer` or a :class:`Failure`; no endpoint misbehaviour
raises. Per attempt, what the endpoint did → the failure's ``kind``, and whether it is retried:

- no answer within ``timeout_s`` → ``timeout``, retried;
- connection refused or reset, name not found → ``connection``, retried;
- HTTP 408, 409, 429 or 5xx → ``http_status``, retried;
- any other non-2xx (400, 401, 403, 404, 422, …) → ``http_status``, not retried: the request or
  the key is wrong, and asking again cannot help;
- HTTP 2xx whose body is not JSON → ``not_json``, retried;
- JSON without a string at ``choices[0].message.content`` → ``no_content``, retried;
- a reply the caller's ``parse`` rejects → ``unparsable``, not retried (callers decode greedily:
  the same reply would come back).

Retry ``k`` (from 0) waits ``backoff_s · 2^k`` seconds, at most :data:`MAX_BACKOFF_S`; the
``openai`` client's own retries are off, so every HTTP request is counted. A request that still
fails after ``max_retries`` retries is a :class:`Failure`, and callers never score it: the judge
leaves the item without a verdict, the thinking reward gives None (0.0 with ``on_failure:
score_zero``, counted), the generation backend records the error in the predictions file.

The API key is read from ``os.environ[cfg.api_key_env]`` at each batch, sent as a bearer token
and never stored, logged or cached: replies and error texts are scrubbed of it (and of a
password in the base URL) before anything else sees them, whole and before they are cut short,
and so is every run of :data:`FRAGMENT` (8) or more consecutive characters of it, which is what
a server that echoes the key cut or split leaves (:func:`scrub`).

An endpoint is named, in the cache key, the cache entries and the metadata callers record, by
:func:`endpoint_name`: its ``endpoint_id`` when set (``serve:<backend>:<model>@<fingerprint>``
for a server the pipeline started, :mod:`vlrl.serving.servers`, whose port changes from run to run
and whose fingerprint changes with its weights and reply-changing arguments), else its ``base_url``
without credentials. A config whose server is not started (``serve`` set,
``base_url`` not) is refused: its requests would go nowhere it names.

May import: :mod:`vlrl.core`, :mod:`vlrl.config`.
"""

from vlrl.endpoints.bound import InFlightBound, endpoint_bound
from vlrl.endpoints.cache import EndpointCache
from vlrl.endpoints.client import EndpointClient, reply_content
from vlrl.endpoints.replies import (
    FRAGMENT,
    MAX_BACKOFF_S,
    MAX_DETAIL,
    NO_KEY,
    RETRY_STATUSES,
    Answer,
    EndpointStats,
    Failure,
    FailureKind,
    MissingAPIKey,
    clip,
    endpoint_name,
    quiet_http_clients,
    redact_url,
    scrub,
)

__all__ = [
    "FRAGMENT",
    "MAX_BACKOFF_S",
    "MAX_DETAIL",
    "NO_KEY",
    "RETRY_STATUSES",
    "Answer",
    "EndpointCache",
    "EndpointClient",
    "EndpointStats",
    "Failure",
    "FailureKind",
    "InFlightBound",
    "MissingAPIKey",
    "clip",
    "endpoint_bound",
    "endpoint_name",
    "quiet_http_clients",
    "redact_url",
    "reply_content",
    "scrub",
]

"""Celery with Redis as the broker: the queue between server replicas and turn workers.

``acks_late`` with ``task_reject_on_worker_lost``: a turn's message is acknowledged only
when the turn ended, so a worker killed mid-turn leaves it unacknowledged and the broker
hands it to another worker after ``worker_redelivery_s`` (Redis' visibility timeout).
Workers take one message at a time per thread (no prefetch hoarding behind a slow turn).

A broker that goes away (Redis restarted) is waited for, however long: the consumer retries
its connection without a limit (Celery's default gives up after 100 attempts and the worker
exits). Celery 5.7 is required: on 5.6 the consumer reconnecting after a restart could trip
over the dropped connection's leftovers (a stale fd, timer or channel whose connection is
gone: "Unrecoverable error: AttributeError('NoneType' object has no attribute 'hostname')"
or ``KeyError(<fd>)``) and stop. A worker that still stops on an error Celery calls
unrecoverable (a message in the queue that is not JSON is one) is started again in the
same process by ``run_worker``; only a shutdown signal ends it. A turn running meanwhile
finishes (its events go to PostgreSQL, not the broker); its message, not acknowledged on the
lost connection, comes back and is skipped as done (see ``turns.run_turn``).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from typing import TYPE_CHECKING, Any, Protocol

from contextengine.errors import ConfigError
from contextengine.session.store.choice import StoreSettings
from contextengine.workers.turns import ProviderFor, Resume, run_turn

if TYPE_CHECKING:
    from celery import Celery

TASK_NAME = "contextengine.run_turn"
QUEUE = "contextengine-turns"
STORE_RETRY_S = 5.0
RESTART_S = 1.0  # pause before a worker that stopped on an error starts again

logger = logging.getLogger(__name__)


class BrokerSettings(Protocol):
    """The broker that hands turns to workers (``Config`` has these settings)."""

    @property
    def broker(self) -> str | None:
        """The Celery broker URL (``redis://HOST:PORT/DB``)."""
        ...

    @property
    def worker_redelivery_s(self) -> float:
        """Seconds before a silent worker's turn goes to another worker."""
        ...


class WorkerSettings(BrokerSettings, StoreSettings, Protocol):
    """What a worker runs on: the broker and the shared session store."""


def celery_app(config: BrokerSettings) -> Celery:
    """The Celery app on the configured broker."""
    if not config.broker:
        raise ConfigError("turns on workers need a broker: --broker redis://HOST:PORT/0")
    try:
        from celery import Celery
    except ImportError:
        raise ConfigError(
            "turns on workers need Celery: pip install 'contextengine[workers]'"
        ) from None
    app = Celery("contextengine", broker=config.broker)
    restore_s = min(10.0, config.worker_redelivery_s)
    app.conf.update(
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_default_queue=QUEUE,
        task_serializer="json",
        accept_content=["json"],
        task_ignore_result=True,
        broker_connection_retry_on_startup=True,
        broker_connection_retry=True,
        broker_connection_max_retries=None,  # wait for the broker however long it is away
        broker_channel_error_retry=True,
        broker_transport_options={
            "visibility_timeout": config.worker_redelivery_s,
            # how often a worker looks for turns whose worker died
            "unacked_restore_interval": restore_s,
            "unacked_restore_throttle": 1,
            # A worker killed during that look leaves its lock behind: it must lapse soon
            # (kombu's default, 5 minutes, holds every dead worker's turn that long).
            "unacked_mutex_expire": math.ceil(restore_s),
        },
        worker_hijack_root_logger=False,
    )
    return app


def enqueue(app: Celery, turn_id: int) -> None:
    """Hand turn ``turn_id`` to the workers."""
    app.send_task(TASK_NAME, args=[turn_id], queue=QUEUE)


def run_worker(
    config: WorkerSettings, provider_for: ProviderFor, resume: Resume, concurrency: int
) -> None:
    """Run a worker until it is stopped: ``concurrency`` threads, each running one turn
    (``resume`` makes a turn's agent)."""
    app = celery_app(config)

    @app.task(name=TASK_NAME, bind=True)
    def turn(task: Any, turn_id: int) -> str:
        try:
            return run_turn(turn_id, config, provider_for, resume)
        except Exception as exc:
            # A turn's own failures end as a recorded `turn_failed`; what escapes is the store
            # being away: try again later rather than leave the turn open for good.
            raise task.retry(exc=exc, countdown=STORE_RETRY_S, max_retries=None) from None

    from celery.signals import worker_shutting_down

    stopping = threading.Event()  # set by a shutdown signal (SIGTERM, SIGINT, SIGQUIT)

    def on_shutdown(**_: object) -> None:
        stopping.set()

    worker_shutting_down.connect(on_shutdown, weak=False)
    while True:
        # ``app.Worker`` as ``celery worker`` builds it, but its exit code is ours to read:
        # ``app.start(argv)`` returns None whatever the worker's exit code (click hands the
        # code back in non-standalone mode and Celery drops it), so it cannot say "failed".
        worker = app.Worker(
            pool_cls="threads",
            concurrency=concurrency,
            queues=QUEUE,
            loglevel="INFO",
            without_gossip=True,
            without_mingle=True,
        )
        worker.start()
        code = worker.exitcode
        if stopping.is_set() or not code:
            return
        logger.error("the worker stopped on an error (exit %s); starting it again", code)
        time.sleep(RESTART_S)

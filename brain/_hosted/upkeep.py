"""The administrator's passes over every tenant: sleep for cron, then VACUUM."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from brain._clock import Clock
from brain._hosted.roles import check_sees_every_tenant
from brain._hosted.schema import TENANT_TABLES, check_schema, connect
from brain._upkeep.sleep import SleepReport, sleep_summary


@dataclass(frozen=True)
class TenantSleep:
    user: str
    summary: str
    changed: bool


def tenants(dsn: str) -> list[str]:
    with connect(dsn) as admin:
        check_schema(admin)
        check_sees_every_tenant(admin)
        return [str(r[0]) for r in admin.execute("SELECT name FROM tenants ORDER BY name")]


def sleep_all(
    dsn: str, clock: Clock, *, dry_run: bool = False, done: Callable[[TenantSleep], None] | None
) -> list[TenantSleep]:
    """One sleep pass for each tenant in turn. Idempotent; beside running servers it takes
    each tenant's writer lock step by step, as `brain sleep` does beside `brain serve`, and a
    second `brain hosted sleep` waits for the first tenant by tenant.

    Then a plain VACUUM of every tenant table reclaims the rows forgotten or replaced since
    the last pass (by this sleep or by the servers), so a forgotten note's dead tuples do not
    wait for autovacuum. Not FULL: it takes no lock that stops a server reading or writing."""
    from brain._hosted.tenant import open_tenant

    passes = []
    for user in tenants(dsn):
        brain = open_tenant(dsn, user, clock=clock)
        try:
            report: SleepReport = brain.sleep(dry_run=dry_run)
        finally:
            brain.close()
        result = TenantSleep(user, sleep_summary(report), report.changed)
        passes.append(result)
        if done is not None:
            done(result)
    if not dry_run:
        vacuum(dsn)
    return passes


def vacuum(dsn: str) -> list[str]:
    """VACUUM (ANALYZE) each tenant table, outside any transaction as VACUUM must be; the
    tables vacuumed."""
    with connect(dsn) as admin:
        for table in TENANT_TABLES:
            admin.execute(f"VACUUM (ANALYZE) {table}")
    return list(TENANT_TABLES)

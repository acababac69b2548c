"""End to end in a real browser: list → open a run → watch it live → approve → compare → start.

One flow, as a person would use it: a run finished from the CLI is listed;
a run started from the task box is followed live while its shell steps
run, pauses on an edit that asks, is approved on its page and finishes; the
two runs are compared with their first divergent event highlighted.
Screenshots of each page are saved (see conftest ``shots``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ui_kit import Server, Workspace

TASK = "capitalise beta in notes.md"


def _page(chromium: Any) -> Any:
    page = chromium.new_page()
    page.set_default_timeout(60_000)
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.requests = requests
    return page


def test_list_follow_approve_compare_start(
    workspace: Workspace, served: Server, chromium: Any, shots: Path
) -> None:
    done = workspace.avo("run", "-c", "quick.toml", TASK)
    assert done.returncode == 0, done.stderr
    (quick,) = workspace.runs()
    page = _page(chromium)

    # the runs list
    page.goto(served.url + "/")
    row = page.locator("table.runs tbody tr", has_text=TASK)
    assert row.locator(".badge").inner_text() == "completed"
    assert "read_file" in row.inner_text() and "write_file" in row.inner_text()

    # start a run from the task box: the run's page opens and follows it live
    page.fill("textarea[name=task]", TASK)
    page.click("button:has-text('Start run')")
    page.wait_for_url(re.compile(r"/runs/[0-9a-f-]+$"))
    live_id = page.url.rsplit("/", 1)[1]
    page.wait_for_selector(".item.k-call:has-text('run_shell')")
    shown_first = page.locator(".item").count()
    assert page.locator("#run-state").inner_text() in ("live", "model_pending", "tool_executing")
    page.screenshot(path=str(shots / "run-live.png"), full_page=True, animations="disabled")
    # items arrive over the stream (no reload): the second shell step and the read
    page.wait_for_selector(".item.fresh.k-result:has-text('read_file')")
    assert page.locator(".item").count() > shown_first

    # it pauses on the edit: the card shows the diff; approve it with a reason
    ask = page.locator(".item.k-ask")
    ask.wait_for()
    page.wait_for_selector("form.decide")  # streamed in with the request, still open
    text = page.locator(".item.k-ask").inner_text()
    # the quick run wrote "Beta": the diff is against the file the run read
    assert "approve write_file?" in text and "+BETA" in text and "-Beta" in text
    assert (workspace.root / "notes.md").read_text() == "alpha\nBeta\ngamma\n"
    # the header followed too: 3,825 in x $3/M + 178 out x $15/M for the four calls so far
    page.wait_for_selector("#run-cost:has-text('$0.0141')")
    page.screenshot(path=str(shots / "run-approval.png"), full_page=True, animations="disabled")
    # the runs list in another tab shows it waiting, and follows it once approved
    listing = _page(chromium)
    listing.goto(served.url + "/")
    badge = f"tr[data-run='{live_id}'] .badge"
    assert listing.locator(badge).inner_text() == "waiting"
    page.fill("form.decide input[name=reason]", "looks right")
    page.click("form.decide button.approve")
    page.wait_for_selector(".item.k-end:has-text('run completed')")
    listing.wait_for_selector(f"{badge}.completed")  # no reload: the row polls /runs.json
    assert listing.locator(f"tr[data-run='{live_id}'] [data-field=steps]").inner_text() == "5"
    listing.close()
    page.wait_for_selector(".runhead[data-live='no']")  # reloaded once the stream ended
    page.wait_for_load_state()
    assert page.locator("#run-state").inner_text() == "completed"
    # priced as avo cost does ([pricing] in avo.toml): 5,065 in x $3/M + 230 out x $15/M
    assert "$0.0186" in page.locator(".facts").inner_text()
    assert "nothing else touched" in page.locator(".item.k-end").inner_text()
    assert (workspace.root / "notes.md").read_text() == "alpha\nBETA\ngamma\n"
    assert page.locator(".item.k-approved:has-text('approved by web via web')").count() == 1
    page.screenshot(path=str(shots / "run-completed.png"), full_page=True, animations="disabled")

    # the same approval as the CLI records it: the store says who and how
    events = workspace.avo("runs", "inspect", live_id, "--json", check=False)
    assert events.returncode == 0, events.stderr

    # compare the two runs from the list (tick two rows)
    page.goto(served.url + "/")
    page.screenshot(path=str(shots / "runs.png"), full_page=True, animations="disabled")
    page.check(f"input.pick[value='{live_id}']")
    page.check(f"input.pick[value='{quick['run_id']}']")
    page.click("#compare-button")
    page.wait_for_url(re.compile(r"/compare\?"))
    banner = page.locator("#divergence").inner_text()
    # same task, different first decision: the first model call's answer is where they part
    assert "First divergent event: #4 vs #4" in banner, banner
    assert page.locator(".item.diverges").count() == 2
    assert "tokens" in page.locator(".chart").first.inner_text()
    page.screenshot(path=str(shots / "compare.png"), full_page=True, animations="disabled")

    # search narrows the list (server side)
    page.goto(served.url + "/?q=BETA+in")
    assert page.locator("table.runs tbody tr").count() == 2
    page.goto(served.url + f"/?q={live_id[:8]}")
    assert page.locator("table.runs tbody tr").count() == 1
    assert page.locator(".count").inner_text() == "1 run"
    page.goto(served.url + "/?tool=run_shell")
    assert page.locator("table.runs tbody tr").count() == 1
    # cost ($0.0186 and $0.0084 at the workspace's [pricing]) and date filters
    page.goto(served.url + "/?min_cost=0.01")
    assert page.locator(f"input.pick[value='{live_id}']").count() == 1
    assert page.locator("table.runs tbody tr").count() == 1
    page.goto(served.url + "/?max_cost=0.01&min_cost=0.001")
    assert page.locator(f"input.pick[value='{quick['run_id']}']").count() == 1
    today = quick["created_at"][:10]
    page.goto(served.url + f"/?from={today}&to={today}")
    assert page.locator("table.runs tbody tr input.pick").count() == 2
    page.goto(served.url + "/?to=2001-01-01")
    assert page.locator("table.runs tbody tr input.pick").count() == 0

    # the plugins page lists what is installed
    page.goto(served.url + "/plugins")
    assert page.locator("td", has_text="avo-ui").count() >= 1
    page.screenshot(path=str(shots / "plugins.png"), full_page=True, animations="disabled")

    # no page asked anything of another host
    foreign = [u for u in page.requests if not u.startswith(served.url)]
    assert foreign == []
    page.close()

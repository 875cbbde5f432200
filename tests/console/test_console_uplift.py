"""The skill page shows the skill's uplift (issue 26 item 1) with a PNG chart of both arms."""

from __future__ import annotations

from skill_library import uplift


def test_the_skill_page_shows_uplift_and_its_chart(client, library, skill_name):
    html = client.get(f"/skills/{skill_name}").text
    assert "not measured (no holdout for this tenant" in html and 'id="uplift-chart"' not in html
    library.configure_uplift(share=0.5, side_effects=True)  # restock changes state: the tenant opts in
    sessions = [f"s-{i}" for i in range(60)]
    for session in sessions:
        held = uplift.bucket(library.tenant, skill_name, session) < 0.5
        assert library.record_session_outcome(session, held or session.endswith(("0", "5")),
                                              skills=[skill_name], cost={"tool_calls": 2 if held else 1})
    found = library.uplift(skill_name)
    assert found.verdict == "negative" and found.suppressed
    html = client.get(f"/skills/{skill_name}").text
    assert "reliably negative" in html and "taken out of fetch" in html
    assert f'src="/skills/{skill_name}/uplift.png' in html
    response = client.get(f"/skills/{skill_name}/uplift.png?version=1")
    assert response.status_code == 200 and response.headers["content-type"] == "image/png"
    assert response.content.startswith(b"\x89PNG\r\n\x1a\n") and len(response.content) > 5000
    assert client.get(f"/skills/{skill_name}/uplift.png?version=x").status_code == 400

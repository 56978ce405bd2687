"""The text recall's ranking (rank_memories) on a real SQLite store, BM25 only (no model load)."""

from __future__ import annotations

from localqwen_memory.prompts import Prompts
from localqwen_memory.recall import (
    RankSettings,
    is_about,
    named_subject,
    rank_memories,
    session_key,
    text_recall,
    without_name,
)
from localqwen_memory.store import MemoryStore

from localqwen.storage.database import Database


def test_a_memory_gains_its_sessions_score_and_hand_added_ones_stand_alone(tmp_path):
    store = MemoryStore(Database(tmp_path / "memory.sqlite3"))
    strong, _ = store.add("The Alps trail, the best trail we hiked on our trail trip", kind="turn",
                          source_session=1, source_message=0)
    weak, _ = store.add("a long trail walk in the rain", kind="turn", source_session=1, source_message=1)
    middle, _ = store.add("the trail in the city park", kind="turn", source_session=2, source_message=0)
    by_hand, _ = store.add("I like the trail by the river near the old mill in town with my dog and my sister on sundays")
    plain = rank_memories(store, "trail", "default", k=4, mode="bm25",
                          settings=RankSettings(session_weight=0, neighbour_penalty=0))
    assert [h.memory.id for h in plain] == [h.memory.id for h in store.search("trail", k=4, mode="bm25")]
    assert [h.memory.id for h in plain].index(middle.id) < [h.memory.id for h in plain].index(weak.id)
    ranked = rank_memories(store, "trail", "default", k=4, mode="bm25", settings=RankSettings(session_weight=0.4,
                                                                                   neighbour_penalty=0))
    order = [h.memory.id for h in ranked]
    # The weak turn shares session 1 with the best match, so it now comes before session 2's turn.
    assert order[0] == strong.id and order.index(weak.id) < order.index(middle.id)
    assert all("recall" in h.scores for h in ranked) and ranked[0].score == max(h.score for h in ranked)
    assert session_key(by_hand) == ("memory", by_hand.id) != session_key(store.add("trail", persona="p")[0])
    assert rank_memories(store, "trail", "default", k=0) == [] and len(rank_memories(store, "trail", "default", k=2)) == 2
    assert rank_memories(store, "nothing matches", "default", mode="bm25") == []
    assert rank_memories(store, "  ", "default", mode="bm25") == []
    recall = text_recall(store, "trail", "default", Prompts.load(), k=2, exclude={strong.id})
    chat_order = rank_memories(store, "trail", "default", k=4, mode="bm25")
    assert [h.memory.id for h in recall.hits] == [h.memory.id for h in chat_order if h.memory.id != strong.id][:2]


def test_a_picked_memory_lowers_its_adjacent_turns_only(tmp_path):
    store = MemoryStore(Database(tmp_path / "memory.sqlite3"))
    best, _ = store.add("kayak kayak kayak lake lake", kind="turn", source_session=1, source_message=4)
    echo, _ = store.add("kayak kayak lake lake, you said", kind="turn", source_session=1, source_message=5)
    apart, _ = store.add("kayak lake much later", kind="turn", source_session=1, source_message=9)
    other, _ = store.add("kayak lake shop", kind="turn", source_session=2, source_message=5)
    settings = RankSettings(session_weight=0, neighbour_penalty=0)
    plain = [h.memory.id for h in rank_memories(store, "kayak lake", "default", k=4, mode="bm25", settings=settings)]
    assert plain[0] == best.id and plain.index(echo.id) < plain.index(other.id)
    ranked = rank_memories(store, "kayak lake", "default", k=4, mode="bm25",
                           settings=RankSettings(session_weight=0, neighbour_penalty=1.0))
    order = [h.memory.id for h in ranked]
    # The adjacent echo of the best turn drops below the other session's turn; a turn of the same
    # session further away (message 9) and the other session's message 5 are not neighbours.
    assert order[0] == best.id and order[-1] == echo.id and set(order) == set(plain)
    assert [h.score for h in ranked] == sorted((h.score for h in ranked), reverse=True)
    unmoved = [i for i in plain if i != echo.id]
    assert [i for i in order if i != echo.id] == unmoved and apart.id in unmoved


def test_the_person_a_question_names_is_taken_out_of_the_query_and_their_memories_lead(tmp_path):
    store = MemoryStore(Database(tmp_path / "memory.sqlite3"))
    about_ann, _ = store.add("I painted a horse last week", kind="turn", subject="Ann", source_session=1,
                             source_message=0)
    about_bob, _ = store.add("Bob: I painted the fence, the fence of Ann's painted garden, painted twice",
                             kind="turn", subject="Bob", source_session=2, source_message=0)
    filler, _ = store.add("We talked a long afternoon about the house, the garden, the dog, the cat, the neighbours, the "
              "weather, the holidays, the car, the school, the trip to the sea and what got painted", kind="turn",
              source_session=3, source_message=0)
    store.add("The user likes coffee", subject="user")
    store.add("Coffee beans come from Brazil", subject="coffee")
    assert named_subject(store, "What has Ann painted?", "default") == "ann"
    assert named_subject(store, "What has ann painted?", "default") is None  # not written as a name
    assert named_subject(store, "What have Ann and Bob painted?", "default") is None  # two people
    assert named_subject(store, "Does the user like coffee?", "default") is None  # "user" and topic words
    assert without_name("What are Ann's hobbies?", "ann") == "What are hobbies?"
    assert without_name("Ann?", "ann") == "Ann?"  # nothing else left: the query stays whole
    settings = RankSettings(session_weight=0, neighbour_penalty=0, subject_weight=0)
    plain = rank_memories(store, "What has Ann painted?", "default", k=2, mode="bm25", settings=settings)
    assert plain[0].memory.id == about_bob.id  # "painted" three times and "Ann" too
    ranked = rank_memories(store, "What has Ann painted?", "default", k=2, mode="bm25",
                           settings=RankSettings(session_weight=0, neighbour_penalty=0))
    assert [h.memory.id for h in ranked] == [about_ann.id, about_bob.id]
    # A raw turn without a subject that names her counts as about her (the name left the query);
    # Bob's turn names her too, but it has its own subject.
    raw, _ = store.add("My friend Ann painted our kitchen door last spring", kind="turn", source_session=4,
                       source_message=0)
    assert is_about(raw, "ann") and not is_about(about_bob, "ann") and is_about(about_ann, "ann")
    ranked = {h.memory.id: h.score for h in rank_memories(store, "What has Ann painted?", "default", k=5,
                                                          mode="bm25", settings=RankSettings(session_weight=0,
                                                                                             neighbour_penalty=0))}
    assert ranked[raw.id] >= 0.5 > ranked[filler.id]  # the subject bonus, given to the raw turn naming her only


def test_the_recall_prompt_writes_dates_as_people_do_and_takes_the_conversations_today(tmp_path):
    from datetime import datetime

    store = MemoryStore(Database(tmp_path / "memory.sqlite3"))
    may = datetime(2023, 5, 7, 13, 56).timestamp()
    store.add("Caroline went to a support group", kind="turn", source_session=1, source_message=0, valid_from=may)
    recall = text_recall(store, "support group", "default", Prompts.load(), k=1,
                         now=datetime(2023, 8, 25, 9, 0).timestamp())
    # "7 May 2023" as LoCoMo's answers and people write it: a model copies the form it is shown.
    assert "7 May 2023" in recall.system_prompt and "2023-05-07" not in recall.system_prompt
    assert "Today is 25 August 2023." in recall.system_prompt
    assert "2023-05-07" in recall.step().detail  # the UI's step keeps the sortable form
    empty = text_recall(store, "nothing like it", "default", Prompts.load(), k=1, now=may)
    assert "Today is 7 May 2023." in empty.system_prompt


def test_recalled_memories_show_the_dates_their_relative_times_meant(tmp_path):
    from datetime import datetime

    store = MemoryStore(Database(tmp_path / "memory.sqlite3"))
    said = datetime(2023, 7, 15, 13, 0).timestamp()  # a Saturday
    memory, _ = store.add("Caroline: I went to the adoption meeting last Friday", kind="turn", source_session=1,
                          source_message=0, valid_from=said)
    recall = text_recall(store, "adoption meeting", "default", Prompts.load(), k=1, now=said)
    # A small model answers with the day a memory was said unless the prompt does the arithmetic.
    assert "last Friday (Friday 14 July 2023)" in recall.system_prompt
    assert "last Friday (Friday 14 July 2023)" in recall.step().detail
    assert store.get(memory.id).text == "Caroline: I went to the adoption meeting last Friday"  # the words kept


def test_named_period_reads_calendar_days_and_months_only():
    from datetime import date

    from localqwen_memory.named_period import named_period

    assert named_period("What did Maria start on 3 June, 2023?") == (date(2023, 6, 3), date(2023, 6, 3))
    assert named_period("Which activity on March 16, 2022?") == (date(2022, 3, 16), date(2022, 3, 16))
    assert named_period("the 1st of Sept 2021") == (date(2021, 9, 1), date(2021, 9, 1))
    assert named_period("notes from 2024-02-29") == (date(2024, 2, 29), date(2024, 2, 29))
    assert named_period("What did Joanna do in January 2022?") == (date(2022, 1, 1), date(2022, 1, 31))
    assert named_period("as of December 2023") == (date(2023, 12, 1), date(2023, 12, 31))
    assert named_period("in February, 2024") == (date(2024, 2, 1), date(2024, 2, 29))
    # No period: a year alone, a day without its year, relative words, an impossible day, "may" as a verb.
    for text in ("What happened in 2022?", "on 3 June", "last week", "on 31 June 2023", "May I ask 2023 things?"):
        assert named_period(text) is None, text


def test_a_question_naming_a_day_lifts_the_memories_dated_then(tmp_path):
    from datetime import datetime

    store = MemoryStore(Database(tmp_path / "memory.sqlite3"))
    june = datetime(2023, 6, 3, 14, 0).timestamp()
    spring = datetime(2023, 4, 20, 9, 0).timestamp()
    early, _ = store.add("I started a pottery class, pottery is fun", kind="turn", source_session=1, source_message=0,
                         valid_from=spring)
    dated, _ = store.add("I signed up for a pottery class yesterday", kind="turn", source_session=2,
                         source_message=0, valid_from=june + 86400)  # said the day after: inside the slack
    store.add("the class on clouds and weather", kind="turn", source_session=3, source_message=0, valid_from=june)
    question = "What class did I sign up for on 3 June, 2023?"
    without = [h.memory.id for h in rank_memories(store, "pottery class", "default", k=3, mode="bm25")]
    assert without[0] == early.id  # no date named: the better text match first
    off = rank_memories(store, "pottery class on 3 June, 2023", "default", k=2, mode="bm25",
                        settings=RankSettings(date_weight=0))
    on = rank_memories(store, "pottery class on 3 June, 2023", "default", k=2, mode="bm25")
    assert off[0].memory.id == early.id and on[0].memory.id == dated.id
    narrow = rank_memories(store, "pottery class on 3 June, 2023", "default", k=2, mode="bm25",
                           settings=RankSettings(date_slack_days=0))
    assert narrow[0].memory.id == early.id  # a day after is outside a zero-day slack
    assert rank_memories(store, question, "default", k=1, mode="bm25")[0].memory.id == dated.id

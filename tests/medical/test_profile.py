"""The patient profile: rule extraction (zh + en, negations, corrections), storage in the session
metadata, model extraction through a real (tiny, taught) model, edit commands."""

from __future__ import annotations

import pytest
from localqwen_medical.profile import (
    EXTRACTION_PROMPT,
    Profile,
    ProfileEditError,
    apply_edit,
    parse_model_facts,
    update_from_turn,
)
from localqwen_medical.profile_patterns import canonical, extract_patterns


def _profile(*turns: str) -> Profile:
    profile = Profile()
    for number, text in enumerate(turns, 1):
        update_from_turn(profile, text, number)
    return profile


@pytest.mark.parametrize("text, field, expected", [
    ("I'm allergic to penicillin and sulfa drugs.", "allergies", ["penicillin", "sulfa drugs"]),
    ("我对青霉素过敏", "allergies", ["青霉素"]),
    ("过敏史：\n鸡蛋过敏，鱼虾过敏（2020-03-26填写）", "allergies", ["鸡蛋", "鱼", "虾"]),
    ("I take metformin 500 mg twice a day and lisinopril.", "medications", ["metformin", "lisinopril"]),
    ("我正在服用二甲双胍和阿司匹林，每天一次。", "medications", ["二甲双胍", "阿司匹林"]),
    ("I'm 67 and I have type 2 diabetes.", "conditions", ["type 2 diabetes"]),
    ("女，32岁，有高血压病史", "conditions", ["高血压"]),
    ("Penicillin makes me break out in hives.", "allergies", ["penicillin"]),  # an allergy told as a reaction
    ("Currently taking 81 mg aspirin daily.", "medications", ["aspirin"]),
    ("平时吃降压药氨氯地平。", "medications", ["氨氯地平"]),
])
def test_rules_find_list_facts(text, field, expected):
    assert getattr(extract_patterns(text), field) == expected


@pytest.mark.parametrize("text, age, sex, pregnant, weeks", [
    ("I'm 67", 67, None, None, None),
    ("我今年5岁", 5, None, None, None),
    ("I'm 34 weeks pregnant.", None, "female", True, 34),  # "I'm 34" here is not an age
    ("怀孕20周了，能吃布洛芬吗？", None, "female", True, 20),
    ("I'm a 45-year-old man.", 45, "male", None, None),
    ("I am a 29 yo female.", 29, "female", None, None),
    ("怀孕情况：\n未怀孕", None, None, False, None),
    ("I'm not pregnant.", None, None, False, None),
])
def test_rules_find_single_values(text, age, sex, pregnant, weeks):
    facts = extract_patterns(text)
    assert (facts.age, facts.sex, facts.pregnant, facts.pregnancy_weeks) == (age, sex, pregnant, weeks)


@pytest.mark.parametrize("text", [
    "Can I take ibuprofen?", "我可以吃阿莫西林吗", "I'm on vacation and I take a walk daily.",
    "My mother takes warfarin and is allergic to sulfa.", "疾病：\n皮肤过敏\n病情描述：\n嘴巴起疹过敏。", "偶尔皮肤过敏",
])
def test_rules_ignore_questions_relatives_and_reactions_without_an_allergen(text):
    facts = extract_patterns(text)
    assert facts.allergies == [] and facts.medications == []


def test_negations_and_corrections_supersede_earlier_turns():
    profile = _profile("I'm allergic to penicillin. I take losartan.", "I'm 67.",
                       "Actually I'm 68, and I'm not allergic to penicillin, I'm allergic to codeine.",
                       "I take lisinopril, not losartan.")
    assert profile.values("allergies") == ["codeine"]
    assert profile.allergies[0].turn == 3
    assert profile.values("medications") == ["lisinopril"]
    assert (profile.age.value, profile.age.turn) == (68, 3)

    zh = _profile("我对青霉素过敏，对磺胺也过敏", "我对青霉素不过敏", "我停了华法林")
    assert zh.values("allergies") == ["磺胺"]


def test_no_known_allergies_is_kept_apart_and_never_erases_a_stated_allergy():
    profile = _profile("No known allergies.")
    assert profile.no_known_allergies is not None and profile.allergies == []
    profile = _profile("I'm allergic to latex.", "No allergies otherwise.")
    assert profile.values("allergies") == ["latex"] and profile.no_known_allergies is None


def test_same_allergy_in_two_languages_is_one_fact():
    assert canonical("青霉素类药物") == canonical("Penicillin") == "penicillin"
    assert _profile("I'm allergic to penicillin.", "我对青霉素过敏").values("allergies") == ["penicillin"]


def test_profile_round_trips_through_session_metadata_and_becomes_a_patient():
    profile = _profile("I'm 34 weeks pregnant and allergic to aspirin. I take levothyroxine.")
    metadata: dict = {"other": 1}
    profile.save(metadata)
    import json

    again = Profile.from_metadata(json.loads(json.dumps(metadata)))  # JSON-able, as the chat store keeps it
    assert again == profile and metadata["other"] == 1
    patient = again.to_patient()
    assert (patient.allergies, patient.medications, patient.pregnant, patient.sex) == (
        ["aspirin"], ["levothyroxine"], True, "female")
    assert "pregnant: yes (34 weeks) [turn 1]" in again.lines()


def test_edit_commands_and_their_errors():
    profile = Profile()
    assert apply_edit(profile, "set allergies penicillin, sulfa") == "set allergies: penicillin, sulfa"
    apply_edit(profile, "add meds warfarin")
    apply_edit(profile, "set age 67")
    apply_edit(profile, "set pregnant 12 weeks")
    assert profile.to_patient().to_dict() == {"allergies": ["penicillin", "sulfa"], "medications": ["warfarin"],
                                              "conditions": [], "age": 67.0, "sex": "female", "pregnant": True}
    apply_edit(profile, "remove allergies sulfa")
    assert profile.values("allergies") == ["penicillin"]
    apply_edit(profile, "set allergies none")
    assert profile.allergies == [] and profile.no_known_allergies is not None
    apply_edit(profile, "clear all")
    assert profile.is_empty()
    for command, message in [("frob allergies x", "unknown profile edit 'frob'"), ("set age abc", "age must be"),
                             ("set colour red", "unknown profile field 'colour'"), ("add age 5", "holds one value"),
                             ("remove allergies aspirin", "has no 'aspirin'"), ("set sex robot", "sex must be"),
                             ("set allergies", "needs a value"), ("", "empty profile edit")]:
        with pytest.raises(ProfileEditError, match=message):
            apply_edit(profile, command)


def test_model_json_is_parsed_robustly():
    assert parse_model_facts("no json here") is None
    facts = parse_model_facts("<think>hmm</think>```json\n{'allergies': ['codeine'], 'age': '40', 'sex': 'F', "
                              "'pregnant': None, 'medications': 'warfarin',}\n```")
    assert (facts.allergies, facts.age, facts.sex, facts.pregnant, facts.medications) == (
        ["codeine"], 40.0, "female", None, ["warfarin"])
    assert parse_model_facts('{"age": "old", "allergies": [3, "none"], "pregnant": "maybe"}').empty()


@pytest.mark.slow  # teaches a tiny model its reply (~15 s alone, a minute on a busy machine)
def test_a_real_model_extracts_and_the_rules_fill_its_gaps(tmp_path, tiny_qwen3_path):
    from localqwen.runtime.engine.transformers_backend import TransformersEngine
    from localqwen.testing.tiny_models import teach_reply

    message = "codeine gives me hives. I take warfarin."
    prompt = EXTRACTION_PROMPT.replace("{known}", "nothing yet").replace("{message}", message)
    reply = '{"allergies": ["codeine"], "age": 40}'
    taught = teach_reply(tiny_qwen3_path, tmp_path / "taught", [{"role": "user", "content": prompt}], reply)
    profile = Profile()
    with TransformersEngine(taught) as engine:
        update_from_turn(profile, message, 1, engine=engine)
    # codeine and the age came from the model (no rule reads "gives me hives"); warfarin from the rules.
    assert profile.values("allergies") == ["codeine"] and profile.age.value == 40
    assert profile.values("medications") == ["warfarin"] and profile.allergies[0].source == "model"
    # A greeting states nothing about the patient: the model is not asked (it would cost a 256-token
    # generation before the greeting is answered); a turn with a cue word is read by the model.
    with TransformersEngine(taught) as engine:
        for greeting in ("Hello!", "thanks a lot", "你好"):
            update_from_turn(profile, greeting, 2, engine=engine)
            assert engine.last_result is None, greeting
        update_from_turn(profile, "I also take aspirin.", 3, engine=engine)
        assert engine.last_result is not None

    with TransformersEngine(tiny_qwen3_path) as untrained:  # random weights: no JSON, the rules take over
        fallback = Profile()
        update_from_turn(fallback, "I'm allergic to penicillin.", 1, engine=untrained)
    assert fallback.values("allergies") == ["penicillin"] and fallback.allergies[0].source == "pattern"

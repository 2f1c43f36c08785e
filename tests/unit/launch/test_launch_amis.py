"""Which images non-alias amiSelectorTerms select, and which one each architecture gets.

Cases follow aws/karpenter-provider-aws v1.14.1 `pkg/providers/amifamily/suite_test.go` (Describe
"AMIProvider", contexts "AMI Selectors" and "AMI List requirements"); the functional test
`tests/functional/test_custom_amis.py` runs the same resolution against moto.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from nodewright.launch.amis import ImageQuery, image_queries, newest_per_architecture
from nodewright.launch.template import block_devices
from nodewright.model.nodeclass import AMISelectorTerm, BlockDevice, BlockDeviceMapping, EC2NodeClass

NOW = datetime(2026, 6, 1, tzinfo=UTC)


def image(
    image_id: str, created: str, arch: str = "x86_64", name: str = "ami", deprecated: timedelta | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {"ImageId": image_id, "CreationDate": created, "Architecture": arch, "Name": name}
    if deprecated is not None:
        out["DeprecationTime"] = (NOW + deprecated).strftime("%Y-%m-%dT%H:%M:%SZ")
    return out


def chosen(*images: dict[str, Any]) -> dict[str, str]:
    return {arch: str(i["ImageId"]) for arch, i in newest_per_architecture(images, NOW.timestamp()).items()}


# ------------------------------------------------------------------------------------------ queries


def test_tags_without_owner_search_every_image_the_account_sees() -> None:
    # It("should have empty owners and use tags when prefixes aren't set")
    [query] = image_queries([AMISelectorTerm(tags={"Name": "my-ami"})], {})
    assert query == ImageQuery((("tag:Name", ("my-ami",)),), ())
    request = query.request()
    assert "Owners" not in request
    assert request["Filters"] == [
        {"Name": "tag:Name", "Values": ["my-ami"]},
        {"Name": "state", "Values": ["available"]},
    ]
    assert request["IncludeDeprecated"] is True


def test_a_name_without_owner_looks_in_the_accounts_own_and_amazons_images() -> None:
    # It("should have default owners and use name when prefixed")
    [query] = image_queries([AMISelectorTerm(name="my-ami")], {})
    assert query == ImageQuery((("name", ("my-ami",)),), ("self", "amazon"))


def test_ids_share_one_request_without_owners() -> None:
    # It("should not set owners when legacy ids are passed")
    terms = [AMISelectorTerm(id="ami-abcd1234"), AMISelectorTerm(id="ami-cafeaced")]
    assert image_queries(terms, {}) == [ImageQuery((("image-id", ("ami-abcd1234", "ami-cafeaced")),))]


def test_name_with_owner_uses_that_owner_only() -> None:
    # It("should allow prefixed name and prefixed owners")
    terms = [AMISelectorTerm(name="my-name", owner="0123456789"), AMISelectorTerm(name="my-name", owner="self")]
    assert image_queries(terms, {}) == [
        ImageQuery((("name", ("my-name",)),), ("0123456789",)),
        ImageQuery((("name", ("my-name",)),), ("self",)),
    ]


def test_tags_of_one_term_are_all_required_and_terms_are_alternatives() -> None:
    # It("should correctly disambiguate AND vs OR semantics for tags"): one request per term, its tags ANDed.
    both = image_queries([AMISelectorTerm(tags={"tag-key-1": "tag-value-1", "tag-key-2": "tag-value-2"})], {})
    assert both == [ImageQuery((("tag:tag-key-1", ("tag-value-1",)), ("tag:tag-key-2", ("tag-value-2",))))]
    either = image_queries(
        [AMISelectorTerm(tags={"tag-key-1": "tag-value-1"}), AMISelectorTerm(tags={"tag-key-2": "*"})], {}
    )
    assert either == [ImageQuery((("tag:tag-key-1", ("tag-value-1",)),)), ImageQuery((("tag-key", ("tag-key-2",)),))]


def test_ssm_parameters_join_the_ids_and_missing_or_odd_values_are_skipped() -> None:
    # It("should succeed to resolve AMIs that use a custom SSM parameter"), It("should not throw an error if SSM
    # parameter is not found"): the adapter resolves parameters, "" when missing; a value that is no AMI id is skipped.
    terms = [
        AMISelectorTerm(ssm_parameter="/my/custom/ami/parameter"),
        AMISelectorTerm(ssm_parameter="/missing"),
        AMISelectorTerm(ssm_parameter="/odd"),
        AMISelectorTerm(id="ami-1"),
    ]
    queries = image_queries(terms, {"/my/custom/ami/parameter": "ami-from-ssm", "/missing": "", "/odd": "latest"})
    assert queries == [ImageQuery((("image-id", ("ami-from-ssm", "ami-1")),))]
    assert image_queries([AMISelectorTerm(ssm_parameter="/missing")], {"/missing": ""}) == []


# ---------------------------------------------------------------------------------------- selection


def test_the_newest_image_per_architecture_wins_across_all_terms() -> None:
    # It("should sort amis by creationDate"); images without a date lose.
    found = chosen(
        image("ami-old", "2021-08-31T00:10:42.000Z"),
        image("ami-new", "2021-08-31T00:12:42.000Z"),
        image("ami-older", "2021-08-31T00:08:42.000Z"),
        image("ami-undated", ""),
        image("ami-arm", "2020-01-01T00:00:00Z", arch="arm64"),
        image("ami-mac", "2030-01-01T00:00:00Z", arch="x86_64_mac"),
    )
    assert found == {"amd64": "ami-new", "arm64": "ami-arm"}


def test_an_older_image_that_is_not_deprecated_beats_a_newer_deprecated_one() -> None:
    # It("should prioritize the older non-deprecated ami without deprecation time")
    found = chosen(
        image("ami-5678", "2021-08-31T00:12:42.000Z", deprecated=-timedelta(hours=1)),
        image("ami-1234", "2020-08-31T00:08:42.000Z"),
    )
    assert found == {"amd64": "ami-1234"}


def test_a_deprecation_time_still_ahead_does_not_count() -> None:
    # It("should prioritize the non-deprecated ami with deprecation time when both have same creation time") and
    # It("...when both have same creation time and different name")
    found = chosen(
        image("ami-5678", "2021-08-31T00:12:42.000Z", name="test-ami-2", deprecated=-timedelta(minutes=10)),
        image("ami-1234", "2021-08-31T00:12:42.000Z", name="test-ami-1", deprecated=timedelta(minutes=10)),
    )
    assert found == {"amd64": "ami-1234"}


def test_between_deprecated_images_the_newer_wins() -> None:
    # It("should prioritize the newer ami if both are deprecated")
    found = chosen(
        image("ami-5678", "2021-08-31T00:12:42.000Z", deprecated=-timedelta(hours=1)),
        image("ami-1234", "2020-08-31T00:08:42.000Z", deprecated=-timedelta(hours=1)),
    )
    assert found == {"amd64": "ami-5678"}


def test_equal_dates_go_to_the_greater_name_then_the_smaller_id_in_any_order() -> None:
    # compareAMI's name tie-break; It("should sort amis with the same name and creation date consistently")
    named = [
        image("ami-b", "2021-08-31T00:10:42Z", name="build-1"),
        image("ami-a", "2021-08-31T00:10:42Z", name="build-2"),
    ]
    assert chosen(*named) == chosen(*reversed(named)) == {"amd64": "ami-a"}
    same = [image(f"ami-{i}", "2021-08-31T00:10:42Z", name="test-ami-1") for i in (4, 3, 2, 1)]
    assert chosen(*same) == chosen(*reversed(same)) == {"amd64": "ami-1"}


# ------------------------------------------------------------------------------------ custom images


def test_a_custom_image_keeps_its_own_volumes_unless_the_class_names_some() -> None:
    # Karpenter's Custom family has no default block device mappings: EC2 uses the image's own.
    assert block_devices(EC2NodeClass(name="c", ami_family_setting="custom")) == ()
    mapping = BlockDeviceMapping("/dev/sda1", BlockDevice(volume_size_bytes=50 * 2**30))
    custom = EC2NodeClass(name="c", ami_family_setting="custom", block_device_mappings=(mapping,))
    assert block_devices(custom) == (mapping,)

import io
import json
import logging

import pytest

from avo.exceptions import ConfigError
from avo.logging_config import configure_logging, install_json_handler

SECRET = "sk-test-0123456789abcdef"
ENV = {"AVO_OPENAI_API_KEY": SECRET, "MY_SERVICE_TOKEN": "tok-value-42"}


@pytest.fixture
def logger_name(request):
    name = f"avo.test.{request.node.name}"
    yield name
    logger = logging.getLogger(name)
    for h in list(logger.handlers):
        logger.removeHandler(h)
        h.close()


def test_plain_lines_are_redacted(logger_name):
    stream = io.StringIO()
    configure_logging(logger_name=logger_name, stream=stream, environ=ENV)
    log = logging.getLogger(logger_name)
    log.info("key is %s and token %s", SECRET, "tok-value-42")
    log.warning("header Authorization: Bearer abcdefghijkl")
    out = stream.getvalue()
    assert SECRET not in out and "tok-value-42" not in out and "abcdefghijkl" not in out
    assert "INFO" in out and "***" in out


def test_json_mode_from_env_redacts_extras_and_tracebacks(logger_name):
    stream = io.StringIO()
    configure_logging(
        logger_name=logger_name, stream=stream, environ={**ENV, "AVO_LOG_FORMAT": "json"}
    )
    log = logging.getLogger(logger_name)
    try:
        raise RuntimeError(f"provider rejected key {SECRET}")
    except RuntimeError:
        log.exception("call failed", extra={"run_id": "r1", "api_key": "abcd-efgh", "note": SECRET})
    line = stream.getvalue().strip()
    assert SECRET not in line and "abcd-efgh" not in line
    record = json.loads(line)
    assert record["level"] == "ERROR" and record["message"] == "call failed"
    assert record["run_id"] == "r1" and record["api_key"] == "***" and record["note"] == "***"
    assert "RuntimeError" in record["exc_info"]


def test_reconfigure_replaces_own_handler_and_respects_level(logger_name):
    configure_logging(logger_name=logger_name, stream=io.StringIO(), environ={})
    stream = io.StringIO()
    configure_logging(logger_name=logger_name, level="warning", stream=stream, environ={})
    log = logging.getLogger(logger_name)
    assert len(log.handlers) == 1
    log.info("hidden")
    log.warning("shown")
    assert "hidden" not in stream.getvalue() and "shown" in stream.getvalue()


def test_install_json_handler(logger_name):
    stream = io.StringIO()
    log = logging.getLogger(logger_name)
    log.setLevel(logging.DEBUG)
    install_json_handler(log, level="DEBUG", stream=stream, environ=ENV)
    log.debug("x %s", "tok-value-42")
    assert json.loads(stream.getvalue())["message"] == "x ***"


def test_bad_level_names_choices():
    with pytest.raises(ConfigError, match="choose one of CRITICAL"):
        configure_logging(level="LOUD", environ={})

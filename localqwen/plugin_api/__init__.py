"""The plugin API: everything a LocalQwen plugin imports comes from here."""

from localqwen.plugin_api.chat import ChatRequest, chat, chat_panel
from localqwen.plugin_api.context import Context
from localqwen.plugin_api.extensions import Extensions
from localqwen.plugin_api.forms import FieldSpec, Form, FormError, Widget, field, form_fields, parse_form
from localqwen.plugin_api.guide import Choice, FlowStep, GuidedFlow, StepView
from localqwen.plugin_api.host import PluginFailure, PluginHost, PluginInfo, PluginLoadError
from localqwen.plugin_api.plugin import Action, Plugin, Requirements, action
from localqwen.plugin_api.runner import run_action, run_chat
from localqwen.vocabulary import events
from localqwen.vocabulary.cancel import Cancelled, CancelToken

__all__ = [
    "Action",
    "CancelToken",
    "ChatRequest",
    "Cancelled",
    "Choice",
    "Context",
    "Extensions",
    "FieldSpec",
    "FlowStep",
    "Form",
    "FormError",
    "GuidedFlow",
    "Plugin",
    "PluginFailure",
    "PluginHost",
    "PluginInfo",
    "PluginLoadError",
    "Requirements",
    "StepView",
    "Widget",
    "action",
    "chat",
    "chat_panel",
    "events",
    "field",
    "form_fields",
    "parse_form",
    "run_action",
    "run_chat",
]

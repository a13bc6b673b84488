"""The guard's phrase tables: words per concept and language, and the rules that score them.

A *concept* is one idea an injection is built from ("ignore", "instructions", "system prompt",
"send", ...). Each language lists its words for a concept in one string: terms are separated
by spaces, words of a multi-word term are joined by ``_``, and a term ending in ``*`` matches
any word it starts (a stem, for inflected languages). Terms are written lower-case and without
Latin accents, nor marks on letters that look Latin (Ukrainian "ї" is written "і"), because the
scan folds text the same way before matching. Chinese and Japanese
terms are matched as substrings, since those languages do not separate words.

A *rule* scores concepts: a single concept with a weight, or two concepts found within
``WINDOW`` words of each other in one sentence, in either order (word order differs between
languages).
Each rule counts once per passage; see ``stages.guard`` for the threshold.
"""

from __future__ import annotations

__all__ = ["CJK_LANGUAGES", "LEXICON", "PAIR_RULES", "SINGLE_RULES", "TRADITIONAL", "WINDOW"]

WINDOW = 12  # words between two concepts of a pair rule (a CJK run counts as one word)

# Languages whose terms are substrings rather than words.
CJK_LANGUAGES = ("zh", "ja")

# Traditional Chinese characters read as the Simplified ones the zh terms are written with
# (pairs: Traditional, Simplified), for the characters of the terms that differ ("覆" is a
# variant: "回覆" is "回复"). Chinese and Japanese words and terms alike are matched so read:
# "忘記先前的所有說明" is "忘记先前的所有说明". Japanese forms of its own ("説", "発") are not
# listed.
TRADITIONAL = (
    "個个 為为 從从 會会 準准 憑凭 則则 動动 發发 後后 復复 複复 開开 戶户 據据 數数 無无"
    " 顯显 機机 來来 沒没 洩泄 現现 碼码 確确 經经 結结 給给 統统 薦荐 裝装 規规 視视 認认"
    " 記记 論论 設设 證证 訴诉 詞词 語语 說说 請请 讀读 輸输 轉转 這这 適适 鑰钥 閱阅 頁页"
    " 資资 覆复"
)

# fmt: off
LEXICON: dict[str, dict[str, str]] = {
    "en": {
        "IGN": "ignore disregard forget override bypass overrule supersede* supersedes neglect"
               " do_not_follow don't_follow stop_following set_aside pay_no_attention never_mind"
               " nevermind scratch_that scratch_all_that throw_out throw_away discard abandon"
               " stop_honoring stop_honouring stop_obeying stop_respecting stop_observing"
               " no_longer_bound not_bound_by cease_following pay_no_heed don't_listen_to"
               " do_not_listen_to do_not_obey don't_obey",
        "PRIOR": "previous prior above earlier preceding former original initial foregoing"
                 " everything_above all_above before_this_line before_this_message"
                 " before_this_point prior_to_this before_this_paragraph",
        "ALL": "all any everything every",
        "POSS": "your you_were_given",
        "INSTR": "instruction* rules guideline* directive* prompt prompts policy policies"
                 " restriction* constraint* guardrail* programming your_new_task your_new_objective"
                 " your_new_goal your_new_mission your_real_task your_actual_task your_true_task",
        # whose instructions they are, when that is whoever set the model up (one word each:
        # a term starting "the" or "your" would be tried at every "the"; a plural's trailing
        # apostrophe is not part of a word, so "developers'" is no term)
        "OWNER": "developer's operator's deployer's administrator's creator's system's",
        "NEW": "new updated",
        "NOW": "from_now_on henceforth from_this_point this_point_forward for_the_remainder"
               " for_the_rest starting_now from_this_moment change_of_plans",
        "YOUARE": "you_are_now you_are_no_longer you're_now you_now you_will_now"
                  " version_of_yourself your_new_name your_name_is_now stay_in_character"
                  " you_have_been_freed you_have_been_released you_are_free you're_free break_free",
        "ACTAS": "act_as pretend roleplay role-play behave_as simulate act_like pretend_to_be"
                 " play_the_role take_on_the_role",
        "FREE": "unrestricted uncensored unfiltered unlimited no_restrictions no_limits no_rules"
                " without_restrictions without_limits without_any_filter no_filters"
                " no_content_policy without_filter no_filter no_safety without_safety"
                " without_any_rules without_rules without_any_limits without_any_restrictions"
                " no_content_filter no_guidelines without_guidelines never_refuses never_refuse"
                " without_refusing free_from_rules free_of_rules freed_from no_ethics"
                " without_ethics no_morals answers_anything answer_anything refuses_nothing"
                " from_every_rule",
        "MODE": "developer_mode god_mode jailbreak jailbroken dan_mode do_anything_now admin_mode"
                " unrestricted_mode debug_mode_enabled",
        "SYSP": "system_prompt system_message system_instructions initial_instructions"
                " hidden_prompt hidden_instructions developer_message operating_instructions"
                " internal_configuration context_window initial_configuration hidden_setup"
                " setup_message opening_instructions original_instructions startup_instructions"
                " initialization_text initialization_prompt initial_prompt"
                " initial_message your_context your_internal_instructions your_internal_rules"
                " your_secret_instructions your_underlying_instructions your_base_prompt",
        "REVEAL": "reveal print repeat output show tell display dump leak disclose reproduce echo"
                  " write_out recite quote",
        "VERBATIM": "verbatim word_for_word exact exactly in_full full_contents unchanged",
        "SEND": "send email e-mail forward post upload transmit exfiltrate submit leak relay"
                " report_back",
        "SECRET": "password* credential* api_key* api_keys secret* token* customer* private"
                  " conversation chat_history environment_variables database records personal_data"
                  " order_data phone_number home_address previous_messages user's_messages"
                  " user's_name full_name address_book session_cookie session_cookies auth_cookie"
                  " login_cookie ssh_key chat_log chat_logs message_history search_history"
                  " conversation_so_far",
        "DECODE": "decode base64 rot13 base32 hex-decode deobfuscate",
        "OBEY": "do_what_it_says what_it_says follow_the_instruction follow_it obey execute_it"
                " execute_as carry_out_the comply follow_only only_follow only_obey"
                " what_this_page_says what_this_document_says",
        "AIADDR": "ai_assistant ai_assistants ai_agent ai_agents ai_system ai_model language_model"
                  " llm llms the_bot to_the_bot chatbot any_ai ai_coding_agents"
                  " automated_assistants automated_assistant automated_agents"
                  " if_you_have_a_terminal if_you_have_tools if_you_can_browse the_assistant_must"
                  " assistants_must ai_models_must",
        "REPLY": "your_reply your_response your_answer your_summary your_review your_output"
                 " every_reply every_response every_summary every_future every_report each_reply"
                 " each_response future_reply before_you_reply before_responding before_you_respond"
                 " before_answering when_summarizing when_summarising when_you_summarize"
                 " before_you_summarize before_summarizing before_you_continue before_you_proceed"
                 " before_proceeding when_you_summarise before_you_summarise whoever_is_summarizing"
                 " whoever_is_summarising anyone_summarizing anyone_summarising"
                 " if_you_are_summarizing if_you_are_summarising when_asked_about if_anyone_asks"
                 " if_a_user_asks if_users_ask if_the_user_asks when_users_ask any_summary"
                 " in_any_summary",
        "APPEND": "append include add insert prepend attach end_your end_with finish_with"
                  " conclude_with close_with",
        "SAFETY": "safety content_policy content_filter safety_filters guardrails safeguards"
                  " confidentiality safety_checks security_checks confirmations"
                  " confirmation_prompts approvals",
        "MEMORY": "long-term_memory your_memory to_memory persist* across_turns across_sessions"
                  " all_future remember_for",
        "CALL": "call invoke use run trigger execute run_the_following execute_the_following"
                " run_this_command execute_this_command use_the_tool use_your_tools",
        "MUST": "must required hereby_instructed mandatory important only_thing_you_should"
                " your_only_task your_only_job all_you_need_to_do should_now must_not",
        "SYSNOTE": "system_note system_update system_notice system_override system_alert"
                   " breach_alert processing_note note_to_the_bot important_system",
        "EXEMPT": "exempt exempted do_not_apply don't_apply no_longer_apply no_longer_applies"
                  " waived outdated obsolete revoked rescinded cancelled canceled void"
                  " null_and_void no_longer_valid no_longer_in_effect",
        "CONCLUDED": "i_have_concluded i_have_determined i_have_decided i_have_established"
                     " i_have_verified i've_concluded i've_determined i've_decided i_conclude"
                     " i_concluded i_determined reasoning_trace chain_of_thought my_reasoning"
                     " internal_reasoning",
        "PERMIT": "feel_free you_are_allowed you're_allowed you_are_permitted you_have_permission"
                  " granted_permission authorized_you",
        "NOASK": "without_approval without_confirmation without_asking without_permission"
                 " without_confirming without_user_confirmation without_telling without_notifying"
                 " without_informing silently do_not_tell don't_tell do_not_mention don't_mention"
                 " do_not_inform skip_confirmation quietly secretly covertly do_not_ask don't_ask"
                 " no_need_to_confirm no_need_to_ask don't_bother_asking do_not_bother_asking"
                 " without_checking without_checking_with without_the_user_knowing"
                 " before_the_user_notices behind_the_scenes no_need_to_check skip_the_usual"
                 " do_this_quietly don't_bother_routing confirmation_is_not_required"
                 " review_is_not_required approval_is_not_required pre-authorized already_approved"
                 " already_signed_off routine_step do_not_ask_the",
        "DESTROY": "delete wipe erase purge empty_the remove_all drop_table drop_database rm_rf"
                   " truncate_table",
        "MYREPLY": "my_summary my_reply my_response my_answer my_output",
        "IDENT": "identifier* reference_code reference_number verification_code confirmation_code"
                 " confirmation_token tracking_code tracking_id tracking_number trace_id doc_id"
                 " session_id request_id ticket_id session_reference reference_id canary",
        "STARTWITH": "starting_with beginning_with start_with begin_with starts_with",
        # what the model was told, as a text names it to the model
        "TOLD": "you_were_told were_you_told you've_been_told you_have_been_told"
                " you_were_instructed were_you_instructed you_were_given were_you_given"
                " you_received you_were_configured configured_with developers_gave_you given_to_you"
                " makers_gave_you told_you_to instructed_you_to",
        # the only thing the answer may say
        "ONLYSAY": "reply_only_with respond_only_with answer_only_with reply_with_only"
                   " respond_with_only answer_with_only output_only_the say_only only_say"
                   " only_reply_with only_respond_with only_answer_with",
        # what to assert in the answer
        "ASSERT": "say_that say_the state_that tell_the_reader tell_the_user tell_users"
                  " tell_the_readers mention_that claim_that sure_to_mention always_mention"
                  " always_recommend always_say recommend_that emphasize_that describe_it_as"
                  " present_it_as never_mention report_that end_every_answer",
        # actions with effects outside the conversation
        "ACTION": "transfer_the transfer_funds wire_the send_money make_a_payment issue_a_refund"
                  " grant_admin grant_access admin_access disable_two-factor disable_2fa"
                  " disable_mfa reset_the_password change_the_password force_push force-push"
                  " push_to_main merge_the_pull_request approve_the_pull_request make_it_public"
                  " place_an_order place_the_order cancel_all sign_them_up add_the_user owner_role"
                  " admin_role admin_scope new_api_key share_the_entire anyone-with-the-link"
                  " anyone_with_the_link branch_protection npm_publish authorized_keys"
                  " kubectl_delete charge_it_to charge_the merge_pr approve_and_merge"
                  " switch_off_two-factor turn_off_two-factor wire book_a cancel_the schedule_a"
                  " fill_in paste_their commit_it",
        # an AI reading the text, addressed as such ("note to the AI", "agents reading this")
        "AIVOC": "note_to_the_ai note_for_the_ai note_to_the_model hey_model dear_model"
                 " hey_assistant dear_assistant if_you_are_an_ai ai_reading ai_reader ai_readers"
                 " assistant_reading assistants_reading agents_processing note_to_ai note_for_ai"
                 " note_to_any_ai note_for_any_ai note_to_the_assistant note_for_the_assistant"
                 " hey_ai hey_bot hi_ai psst_assistant psst_ai attention_ai attention_assistant"
                 " attention_agent dear_ai if_you_are_an_assistant if_you_are_an_automated"
                 " if_you_are_a_bot if_you_are_a_language_model if_you_are_an_llm"
                 " if_you_are_an_agent ai_processing ai_summarizing ai_summarising ai_listening"
                 " assistant_processing assistant_handling assistant_managing assistant_summarizing"
                 " assistant_summarising assistant_transcribing assistant_triaging"
                 " assistants_processing agent_reading agents_reading agent_processing"
                 " agent_with_shell agents_with_shell agent_editing agents_editing bot_summarizing"
                 " bot_summarising bot_reading model_reading llm_reading llms_reading anyone's_ai"
                 " anyones_ai ai_summarizer* ai_evaluator* ai_helpers automated_readers"
                 " automated_reviewers automated_summar* automated_triage triage_bot llm_agents"
                 " the_assistant_should assistants_should ai_models_should when_the_assistant"
                 " when_an_assistant summarizer_note agent_note note_to_assistant"
                 " for_the_ai_listening",
        # a word an AI reader may be named by: no rule of its own, it tells the scan where
        # ``stages.guard_address`` may find an address (see ``guard_phrases.may_address``)
        "ADDRESSEE": "ai llm llms chatbot chatbots bot bots assistant assistants copilot"
                     " copilots gpt gpts summarizer summarizers summariser summarisers agent"
                     " agents model models summary summaries whoever anyone anybody anyones"
                     " automated machine-generated chatgpt claude gemini grok bard llama mistral",
        "PRIORTEXT": "words_above everything_above above_text preceding_text previous_text"
                     " everything_before messages_above previous_messages text_above content_above"
                     " previous_context prior_context earlier_context start_of_this_conversation"
                     " beginning_of_this_conversation start_of_the_conversation"
                     " beginning_of_the_conversation above_this_paragraph above_this_line"
                     " before_this_chat this_chat_started before_this_conversation"
                     " preceding_context guidance_above directions_above orders_above",
    },
    "es": {
        "IGN": "ignora ignore ignoren ignorar olvida olvide olviden olvidar omite omita descarta"
               " hace_caso_omiso haz_caso_omiso no_sigas",
        "PRIOR": "anterior* previa* previo* precedente* arriba original*",
        "ALL": "todo todas todos cualquier",
        "POSS": "tus tu sus",
        "INSTR": "instruccion* instrucciones regla* directriz* directrices indicacion*"
                 " restriccion* prompt politica*",
        "NEW": "nueva* nuevo* nuevas",
        "NOW": "a_partir_de_ahora desde_ahora ahora de_ahora_en_adelante a_partir_de_este_punto"
               " a_partir_de_este_momento de_aqui_en_adelante",
        "YOUARE": "ahora_eres ya_no_eres ahora_estas eres_ahora",
        "ACTAS": "actua_como finge haz_de_cuenta simula",
        "FREE": "sin_restricciones sin_limites sin_filtro sin_filtros sin_reglas sin_censura"
                " ninguna_restriccion",
        "MODE": "modo_desarrollador modo_dios modo_sin_restricciones",
        "SYSP": "prompt_del_sistema prompt_de_sistema instrucciones_del_sistema"
                " mensaje_del_sistema instrucciones_iniciales",
        "REVEAL": "revela revele muestra muestre imprime repite dime escribe",
        "VERBATIM": "palabra_por_palabra textualmente literalmente exacta*",
        "SEND": "envia envie enviar reenvia manda mande",
        "SECRET": "contrasena* credencial* clave* datos_de_clientes datos_del_cliente secreto*"
                  " token*",
        "DECODE": "decodifica descifra",
        "OBEY": "haz_lo_que_dice sigue_la_instruccion obedece",
        "AIADDR": "asistente_de_ia agente_de_ia modelo_de_lenguaje",
        "REPLY": "tu_respuesta cualquier_respuesta cada_respuesta tu_resumen"
                 " cuando_resumas al_resumir cuando_respondas",
        "APPEND": "anade* agrega* incluye* adjunta*",
        "SAFETY": "seguridad politica_de_contenido",
        "SYSNOTE": "nota_del_sistema aviso_del_sistema mensaje_del_sistema",
        "MUST": "debe debes",
        "EXEMPT": "no_aplican no_se_aplican no_aplica no_se_aplica exento exenta ya_no_aplican",
        "CONCLUDED": "he_determinado he_concluido he_decidido ya_he_determinado como_asistente",
        "PERMIT": "puedes tienes_permiso esta_permitido",
        "NOASK": "sin_aprobacion sin_confirmacion sin_preguntar sin_permiso sin_avisar no_le_digas"
                 " no_menciones",
        "MYREPLY": "mi_resumen mi_respuesta",
        "IDENT": "codigo_de_referencia identificador* codigo_de_verificacion",
        "PRIORTEXT": "texto_anterior todo_lo_anterior palabras_anteriores",
        "AIVOC": "nota_para_la_ia nota_para_el_asistente nota_para_el_modelo"
                 " nota_para_cualquier_ia aviso_para_la_ia atencion_ia atencion_asistente hola_ia"
                 " querido_asistente querida_ia si_eres_una_ia si_eres_un_asistente"
                 " si_eres_un_modelo ia_que_lea ia_que_este_leyendo asistente_que_lea"
                 " asistente_que_este_leyendo modelo_que_lea",
        "ASSERT": "di_que diga_que dile_al_usuario dile_al_lector afirma_que menciona_que"
                  " recomienda_que siempre_recomienda siempre_di recomienda_nuestro*",
        "ONLYSAY": "responde_unicamente responde_solo responde_solamente",
    },
    "fr": {
        "IGN": "ignore ignorez oubliez oublie_tout oublie_toutes oublie_les oublie_tes negligez"
               " ne_suivez_plus ne_tiens_pas_compte ne_tenez_pas_compte ne_tiens_plus_compte"
               " ne_tenez_plus_compte",
        "PRIOR": "precedent* anterieur* ci-dessus plus_haut initiale*",
        "ALL": "tout toutes tous",
        "POSS": "tes vos ton votre",
        "INSTR": "instruction* regle* consigne* directive* restriction* prompt politique*",
        "NEW": "nouvelle* nouveau*",
        "NOW": "desormais dorenavant a_partir_de_maintenant maintenant",
        "YOUARE": "tu_es_maintenant vous_etes_maintenant tu_es_desormais vous_etes_desormais"
                  " tu_n'es_plus vous_n'etes_plus",
        "ACTAS": "agis_comme agissez_comme fais_semblant faites_semblant",
        "FREE": "sans_restriction* sans_limite* sans_filtre* sans_regle* sans_censure"
                " aucune_restriction",
        "MODE": "mode_developpeur mode_dieu",
        "SYSP": "prompt_systeme instructions_systeme message_systeme instructions_initiales"
                " consignes_systeme",
        "REVEAL": "revele revelez revele-moi affiche affichez montre montrez repete repetez"
                  " imprime dis-moi",
        "VERBATIM": "mot_pour_mot textuellement exactement",
        "SEND": "envoie envoyez envoie-les envoyez-les transfere transferez",
        "SECRET": "mot_de_passe mots_de_passe identifiant* donnees_clients secret* cle* jeton*",
        "DECODE": "decode decodez dechiffre",
        "OBEY": "fais_ce_qu'il_dit faites_ce_qu'il_dit obeis obeissez",
        "AIADDR": "assistant_ia agent_ia modele_de_langage",
        "REPLY": "ta_reponse votre_reponse toute_reponse chaque_reponse votre_resume",
        "APPEND": "ajoute* ajoutez inclu* joins",
        "SAFETY": "securite politique_de_contenu",
        "SYSNOTE": "note_systeme avis_systeme message_systeme",
        "MUST": "doit dois devez",
        "EXEMPT": "ne_s'appliquent_pas ne_s'applique_pas ne_s'appliquent_plus exempte exemptee",
        "CONCLUDED": "j'ai_conclu j'ai_determine j'ai_etabli j'ai_deja_etabli en_tant_qu'assistant",
        "PERMIT": "tu_peux vous_pouvez tu_as_le_droit vous_etes_autorise",
        "NOASK": "sans_approbation sans_confirmation sans_demander sans_autorisation sans_prevenir"
                 " ne_dis_pas ne_mentionne_pas",
        "MYREPLY": "mon_resume ma_reponse",
        "IDENT": "code_de_reference code_de_verification",
        "PRIORTEXT": "texte_ci-dessus tout_ce_qui_precede mots_ci-dessus",
        "AIVOC": "note_pour_l'ia note_a_l'ia consigne_pour_l'ia message_pour_l'ia"
                 " note_pour_l'assistant note_a_l'assistant cher_assistant chere_ia"
                 " si_tu_es_une_ia si_vous_etes_une_ia ia_qui_lit_ceci assistant_qui_lit_ceci"
                 " a_l'ia_qui pour_l'ia_qui a_l'assistant_qui pour_l'assistant_qui a_toute_ia"
                 " aux_ia_qui ia_qui_lit_cette* ia_qui_lisez",
        "ASSERT": "dis_que dites_que affirme_que mentionne_que recommande_uniquement"
                  " recommande_toujours dis_a_l'utilisateur dites_a_l'utilisateur",
        "TOLD": "ce_qu'on_t'a_dit on_t'a_dit on_vous_a_dit ce_qu'on_vous_a_dit",
    },
    "de": {
        "IGN": "ignoriere ignorier ignoriert ignorieren vergiss vergesst vergessen missachte"
               " uberschreibe befolge_nicht",
        "PRIOR": "vorherig* vorige* obig* bisherig* fruher* ursprunglich*",
        "ALL": "alle alles jegliche",
        "POSS": "deine deinen eure ihre",
        "INSTR": "anweisung* regel* richtlinie* vorgabe* befehl* einschrankung* systemanweisung*"
                 " prompt",
        "NEW": "neue* neuer",
        "NOW": "ab_jetzt ab_sofort von_nun_an jetzt",
        "YOUARE": "du_bist_jetzt du_bist_nun du_bist_ab_jetzt du_bist_kein sie_sind_jetzt",
        "ACTAS": "tu_so_als gib_dich_als spiele_die_rolle",
        "FREE": "uneingeschrankt* ohne_einschrankung* ohne_regeln keine_regeln ohne_filter"
                " keine_einschrankungen ohne_zensur ohne_grenzen keine_richtlinien",
        "MODE": "entwicklermodus",
        "SYSP": "system-prompt systemprompt systemanweisung* systemnachricht"
                " ursprunglichen_anweisungen",
        "REVEAL": "verrate zeige zeig gib_aus wiederhole drucke nenne",
        "VERBATIM": "wortwortlich wortlich wort_fur_wort",
        "SEND": "sende schicke leite_weiter ubermittle",
        "SECRET": "passwort* kennwort* zugangsdaten kundendaten geheim* schlussel* token*",
        "DECODE": "dekodiere entschlussle",
        "OBEY": "tu_was_darin_steht befolge_die_anweisung",
        "AIADDR": "ki-assistent ki-agent sprachmodell",
        "REPLY": "jeder_antwort jede_antwort deiner_antwort deine_antwort",
        "APPEND": "angehangt anhangen hange fuge fugen",
        "SAFETY": "sicherheitsrichtlinie* sicherheit*",
        "SYSNOTE": "systemhinweis systemnachricht systemmeldung",
        "MUST": "muss musst",
        "EXEMPT": "nicht_gelten gelten_nicht gilt_nicht nicht_gilt befreit ausgesetzt"
                  " gelten_nicht_mehr gilt_nicht_mehr nicht_mehr_gultig ungultig aufgehoben",
        "CONCLUDED": "habe_ich_festgestellt habe_ich_bereits_festgestellt ich_habe_festgestellt"
                     " ich_habe_entschieden als_assistent",
        "PERMIT": "du_kannst du_darfst sie_durfen",
        "NOASK": "ohne_genehmigung ohne_bestatigung ohne_nachzufragen ohne_erlaubnis erwahne_nicht",
        "MYREPLY": "meine_zusammenfassung meine_antwort",
        "IDENT": "referenzcode kennung* bestatigungscode verifizierungscode",
        "PRIORTEXT": "text_oben alles_oben obigen_text worte_oben",
        "AIVOC": "hinweis_fur_die_ki hinweis_an_die_ki notiz_fur_die_ki notiz_an_die_ki hallo_ki"
                 " liebe_ki lieber_assistent wenn_du_eine_ki_bist falls_du_eine_ki_bist"
                 " ki_die_diesen_text ki_die_diese_seite an_die_ki_die hinweis_an_das_sprachmodell"
                 " notiz_an_das_sprachmodell hinweis_an_den_assistenten an_das_sprachmodell_das"
                 " fur_die_ki_die",
        "ASSERT": "sage_dass sag_dass behaupte_dass erwahne_dass empfiehl_immer antworte_nur"
                  " teile_dem_nutzer_mit sage_dem_nutzer sag_dem_nutzer empfiehl_dem_nutzer"
                  " empfiehl_dem_benutzer sag_dem_benutzer sage_dem_benutzer",
    },
    "pt": {
        "IGN": "ignore ignora ignorem ignorar esqueca desconsidere desconsidera nao_siga",
        "PRIOR": "anterior* previa* previo* acima",
        "ALL": "todas todos tudo qualquer",
        "POSS": "suas seus tuas teus",
        "INSTR": "instruc* regra* diretriz* diretrizes restric* prompt politica*",
        "NEW": "nova* novo*",
        "NOW": "a_partir_de_agora agora de_agora_em_diante",
        "YOUARE": "voce_agora_e agora_voce_e voce_e_agora agora_es",
        "ACTAS": "aja_como finja atue_como",
        "FREE": "sem_restric* sem_limites sem_filtro* sem_regras sem_censura",
        "MODE": "modo_desenvolvedor",
        "SYSP": "prompt_do_sistema instrucoes_do_sistema mensagem_do_sistema instrucoes_iniciais",
        "REVEAL": "revele revela mostre mostra imprima repita diga",
        "VERBATIM": "palavra_por_palavra literalmente exatamente",
        "SEND": "envie envia encaminhe mande",
        "SECRET": "senha* credencia* dados_dos_clientes chave* segredo* token*",
        "DECODE": "decodifique decodifica",
        "OBEY": "faca_o_que_diz obedeca",
        "AIADDR": "assistente_de_ia agente_de_ia modelo_de_linguagem",
        "REPLY": "sua_resposta cada_resposta qualquer_resposta",
        "APPEND": "adicione acrescente inclua anexe",
        "SAFETY": "seguranca",
        "SYSNOTE": "nota_do_sistema aviso_do_sistema",
        "MUST": "deve",
        "EXEMPT": "nao_se_aplicam nao_se_aplica nao_valem isento isenta nao_valem_mais"
                  " nao_vale_mais nao_estao_mais_em_vigor",
        "CONCLUDED": "ja_determinei determinei conclui como_assistente",
        "PERMIT": "voce_pode",
        "NOASK": "sem_aprovacao sem_confirmacao sem_perguntar sem_permissao nao_mencione",
        "MYREPLY": "meu_resumo minha_resposta",
        "IDENT": "codigo_de_referencia identificador* codigo_de_verificacao",
        "PRIORTEXT": "texto_acima tudo_acima palavras_acima",
        "AIVOC": "nota_para_a_ia nota_para_o_assistente ia_que_esta_lendo"
                 " assistente_que_esta_lendo atencao_ia ola_ia caro_assistente se_voce_e_uma_ia"
                 " se_voce_for_uma_ia",
        "ASSERT": "diga_que diz_que afirme_que mencione_que recomende_sempre diga_ao_usuario"
                  " diga_ao_leitor",
    },
    "it": {
        "IGN": "ignora ignori ignorate ignorare dimentica dimenticate dimenticare trascura"
               " non_seguire",
        "PRIOR": "precedent* sopra anterior* original*",
        "ALL": "tutte tutti tutto qualsiasi",
        "POSS": "tue tuoi tua tuo",
        "INSTR": "istruzion* regol* linee_guida direttiv* restrizion* prompt politic*",
        "NEW": "nuov*",
        "NOW": "d'ora_in_poi da_ora_in_poi ora adesso",
        "YOUARE": "ora_sei adesso_sei sei_ora non_sei_piu",
        "ACTAS": "comportati_come fingi agisci_come",
        "FREE": "senza_restrizion* senza_limiti senza_filtr* senza_regole senza_censura",
        "MODE": "modalita_sviluppatore",
        "SYSP": "prompt_di_sistema istruzioni_di_sistema messaggio_di_sistema istruzioni_iniziali",
        "REVEAL": "rivela rivelami mostra mostrami stampa ripeti dimmi",
        "VERBATIM": "parola_per_parola testualmente esattamente",
        "SEND": "invia inviare inoltra manda",
        "SECRET": "password credenzial* dati_dei_clienti chiave* segret* token*",
        "DECODE": "decodifica",
        "OBEY": "fai_cio_che_dice obbedisci",
        "AIADDR": "assistente_ia agente_ia modello_linguistico",
        "REPLY": "ogni_risposta tua_risposta qualsiasi_risposta",
        "APPEND": "aggiung* aggiunto includi allega",
        "SAFETY": "sicurezza",
        "SYSNOTE": "nota_di_sistema avviso_di_sistema",
        "MUST": "deve devi",
        "EXEMPT": "non_valgono non_vale non_si_applicano non_si_applica esente",
        "CONCLUDED": "ho_stabilito ho_gia_stabilito ho_concluso ho_determinato come_assistente",
        "PERMIT": "puoi sei_autorizzato",
        "NOASK": "senza_approvazione senza_conferma senza_chiedere senza_permesso non_menzionare",
        "MYREPLY": "mio_riassunto mia_risposta",
        "IDENT": "codice_di_riferimento identificativo codice_di_verifica",
        "PRIORTEXT": "testo_sopra tutto_quanto_sopra parole_sopra",
    },
    "nl": {
        "IGN": "negeer negeren vergeet vergeten",
        "PRIOR": "vorige eerdere bovenstaande voorgaande oorspronkelijke",
        "ALL": "alle alles",
        "POSS": "je jouw uw",
        "INSTR": "instructie* regels richtlijn* opdracht* beperking* prompt",
        "NEW": "nieuwe",
        "NOW": "vanaf_nu voortaan nu",
        "YOUARE": "je_bent_nu jij_bent_nu u_bent_nu",
        "ACTAS": "doe_alsof gedraag_je_als speel_de_rol",
        "FREE": "zonder_beperkingen zonder_regels zonder_filter* onbeperkt ongecensureerd",
        "MODE": "ontwikkelaarsmodus",
        "SYSP": "systeemprompt systeeminstructie* systeembericht",
        "REVEAL": "onthul toon laat_zien herhaal print vertel",
        "VERBATIM": "woord_voor_woord letterlijk",
        "SEND": "stuur verstuur",
        "SECRET": "wachtwoord* klantgegevens geheim* sleutel*",
        "DECODE": "decodeer",
        "OBEY": "doe_wat_er_staat gehoorzaam",
        "AIADDR": "ai-assistent taalmodel",
        "REPLY": "elk_antwoord je_antwoord",
        "APPEND": "voeg",
        "SAFETY": "veiligheid*",
        "SYSNOTE": "systeemmelding systeembericht",
        "EXEMPT": "niet_van_toepassing gelden_niet geldt_niet vrijgesteld",
        "CONCLUDED": "ik_heb_vastgesteld als_assistent",
        "NOASK": "zonder_goedkeuring zonder_bevestiging zonder_toestemming",
    },
    "sv": {
        "IGN": "ignorera strunta glom",
        "PRIOR": "tidigare ovanstaende foregaende ursprungliga",
        "ALL": "alla allt",
        "POSS": "dina din",
        "INSTR": "instruktion* regler riktlinje* direktiv* begransning* prompt",
        "NEW": "nya",
        "NOW": "fran_och_med_nu hadanefter nu",
        "YOUARE": "du_ar_nu",
        "ACTAS": "latsas agera_som",
        "FREE": "utan_begransningar utan_regler utan_filter obegransad ocensurerad",
        "MODE": "utvecklarlage",
        "SYSP": "systemprompt* systeminstruktion* systemmeddelande*",
        "REVEAL": "avsloja visa upprepa skriv_ut beratta",
        "VERBATIM": "ordagrant ord_for_ord",
        "SEND": "skicka",
        "SECRET": "losenord* kunddata hemlig* nyckel*",
        "DECODE": "avkoda",
        "AIADDR": "ai-assistent sprakmodell",
        "REPLY": "varje_svar ditt_svar",
        "APPEND": "lagg_till",
        "SAFETY": "sakerhet*",
        "EXEMPT": "galler_inte undantagen",
        "NOASK": "utan_godkannande utan_bekraftelse",
    },
    "pl": {
        "IGN": "zignoruj ignoruj zapomnij pomin",
        "PRIOR": "poprzedni* wczesniejsz* powyzsz*",
        "ALL": "wszystkie wszystko",
        "POSS": "twoje swoje",
        "INSTR": "instrukcj* zasad* regul* wytyczn* polecen* ograniczen* prompt",
        "NEW": "now*",
        "NOW": "od_teraz teraz",
        "YOUARE": "jestes_teraz teraz_jestes nie_jestes_juz",
        "ACTAS": "udawaj zachowuj_sie_jak",
        "FREE": "bez_ograniczen bez_zasad bez_filtr* bez_cenzury",
        "MODE": "tryb_dewelopera tryb_programisty",
        "SYSP": "prompt_systemowy instrukcje_systemowe wiadomosc_systemowa",
        "REVEAL": "ujawnij pokaz wyswietl powtorz wypisz podaj",
        "VERBATIM": "slowo_w_slowo doslownie",
        "SEND": "wyslij przeslij",
        "SECRET": "hasl* dane_klientow klucz* sekret*",
        "DECODE": "zdekoduj odkoduj",
        "AIADDR": "asystent_ai model_jezykowy",
        "REPLY": "kazdej_odpowiedzi twojej_odpowiedzi",
        "APPEND": "dodaj dolacz",
        "SAFETY": "bezpieczenstw*",
        "EXEMPT": "nie_obowiazuja nie_dotycza nie_maja_zastosowania",
        "NOASK": "bez_zgody bez_potwierdzenia bez_pytania",
    },
    "tr": {
        "IGN": "yok_say gormezden unut gozardi gozard* dikkate_alma",
        "PRIOR": "onceki yukaridaki eski",
        "ALL": "tum tumunu butun hepsini",
        "POSS": "senin",
        "INSTR": "talimat* kural* yonerge* komut* kisitlama* prompt",
        "NEW": "yeni",
        "NOW": "artik bundan_sonra simdi",
        "YOUARE": "artik_sen sen_artik",
        "ACTAS": "gibi_davran rol_yap",
        "FREE": "kisitlamasiz sinirsiz kuralsiz filtresiz sansursuz kisitlama_olmadan",
        "MODE": "gelistirici_modu",
        "SYSP": "sistem_istem* sistem_talimat* sistem_mesaj*",
        "REVEAL": "goster acikla yazdir tekrarla soyle ifsa",
        "VERBATIM": "kelimesi_kelimesine aynen",
        "SEND": "gonder ilet",
        "SECRET": "sifre* parola* musteri_verileri anahtar* gizli*",
        "DECODE": "coz",
        "AIADDR": "yapay_zeka dil_modeli",
        "REPLY": "her_yanit cevabin yanitin",
        "APPEND": "ekle",
        "SAFETY": "guvenlik*",
        "EXEMPT": "gecerli_degil uygulanmaz muaf",
        "NOASK": "onay_almadan onaysiz sormadan",
    },
    "vi": {
        "IGN": "bo_qua phot_lo quen_di quen",
        "PRIOR": "truoc_do truoc phia_tren o_tren",
        "ALL": "tat_ca moi",
        "POSS": "cua_ban",
        "INSTR": "huong_dan chi_dan chi_thi quy_tac luat_le lenh han_che prompt",
        "NEW": "moi",
        "NOW": "tu_gio tu_bay_gio bay_gio",
        "YOUARE": "ban_bay_gio_la bay_gio_ban_la",
        "ACTAS": "dong_vai hay_gia_vo gia_vo",
        "FREE": "khong_gioi_han khong_co_gioi_han khong_han_che khong_co_han_che khong_co_quy_tac"
                " khong_kiem_duyet",
        "MODE": "che_do_nha_phat_trien",
        "SYSP": "loi_nhac_he_thong prompt_he_thong chi_dan_he_thong tin_nhan_he_thong",
        "REVEAL": "tiet_lo hien_thi in_ra lap_lai cho_toi_biet",
        "VERBATIM": "nguyen_van tung_chu",
        "SEND": "gui chuyen_tiep",
        "SECRET": "mat_khau du_lieu_khach_hang khoa_api bi_mat",
        "DECODE": "giai_ma",
        "AIADDR": "tro_ly_ai mo_hinh_ngon_ngu",
        "REPLY": "moi_cau_tra_loi cau_tra_loi_cua_ban",
        "APPEND": "them_vao",
        "SAFETY": "an_toan",
        "EXEMPT": "khong_ap_dung",
        "NOASK": "khong_can_xac_nhan khong_can_hoi",
    },
    "id": {
        "IGN": "abaikan lupakan hiraukan",
        "PRIOR": "sebelumnya di_atas",
        "ALL": "semua segala",
        "POSS": "anda kamu",
        "INSTR": "instruksi aturan pedoman perintah batasan prompt petunjuk",
        "NEW": "baru",
        "NOW": "mulai_sekarang sekarang",
        "YOUARE": "kamu_sekarang anda_sekarang sekarang_kamu sekarang_anda",
        "ACTAS": "berpura-pura bertindak_sebagai",
        "FREE": "tanpa_batasan tanpa_aturan tanpa_filter tanpa_sensor",
        "MODE": "mode_pengembang",
        "SYSP": "prompt_sistem instruksi_sistem pesan_sistem",
        "REVEAL": "ungkapkan tampilkan tunjukkan ulangi cetak beritahu",
        "VERBATIM": "kata_demi_kata persis",
        "SEND": "kirim kirimkan teruskan",
        "SECRET": "kata_sandi data_pelanggan kunci rahasia",
        "DECODE": "dekode",
        "AIADDR": "asisten_ai model_bahasa",
        "REPLY": "setiap_jawaban jawabanmu jawaban_anda",
        "APPEND": "tambahkan",
        "SAFETY": "keamanan",
        "EXEMPT": "tidak_berlaku dikecualikan",
        "NOASK": "tanpa_persetujuan tanpa_konfirmasi",
    },
    "ru": {
        "IGN": "игнорируй игнорируйте проигнорируй забудь забудьте пренебреги не_следуй не_обращай",
        "PRIOR": "предыдущ* прежн* вышеуказанн* выше ранее",
        "ALL": "все любые",
        "POSS": "свои твои ваши",
        "INSTR": "инструкци* правил* указани* директив* ограничени* промпт* команд*",
        "NEW": "нов*",
        "NOW": "отныне теперь с_этого_момента",
        "YOUARE": "теперь_ты ты_теперь ты_больше_не",
        "ACTAS": "притворись веди_себя_как действуй_как",
        "FREE": "без_ограничений без_правил без_фильтр* без_цензуры",
        "MODE": "режим_разработчика",
        "SYSP": "системн*_промпт* системн*_инструкци* системн*_сообщени* исходные_инструкции",
        "REVEAL": "покажи раскрой выведи повтори напиши скажи",
        "VERBATIM": "дословно слово_в_слово",
        "SEND": "отправь перешли",
        "SECRET": "парол* данные_клиентов ключ* секрет* токен*",
        "DECODE": "декодируй расшифруй",
        "AIADDR": "ии-ассистент языковая_модель ии-ассистента ии-ассистенту",
        "REPLY": "каждому_ответу каждый_ответ своему_ответу",
        "APPEND": "добавь",
        "SAFETY": "безопасност*",
        "EXEMPT": "не_действуют не_применяются не_распространяются не_применимы"
                  " больше_не_действуют больше_не_действует утратили_силу",
        "CONCLUDED": "я_пришел_к_выводу я_установил как_ассистент",
        "NOASK": "без_подтверждения без_разрешения без_согласия не_сообщай не_упоминай",
        "AIVOC": "ии_читающему заметка_для_ии примечание_для_ии привет_ии дорогой_ассистент"
                 " если_ты_ии если_вы_ии для_ии_читающ* для_ии_который ии_который_читает"
                 " для_ассистента_читающ*",
        "ASSERT": "скажи_что скажите_что сообщи_пользователю отвечай_пользователю отвечай_что"
                  " всегда_рекомендуй скажи_пользователю скажите_пользователю"
                  " посоветуй_пользователю",
    },
    "uk": {
        "IGN": "ігноруй ігноруйте проігноруй забудь забудьте не_виконуй",
        "PRIOR": "попередн* вищезазначен* вище",
        "ALL": "всі усі будь-які",
        "POSS": "своі твоі",
        "INSTR": "інструкці* правил* вказівк* обмежен* промпт* команд*",
        "NEW": "нов*",
        "NOW": "відтепер тепер",
        "YOUARE": "тепер_ти ти_тепер ти_більше_не",
        "ACTAS": "вдавай поводься_як",
        "FREE": "без_обмежень без_правил без_фільтр* без_цензури",
        "MODE": "режим_розробника",
        "SYSP": "системн*_промпт* системн*_інструкці* системн*_повідомлен*",
        "REVEAL": "покажи розкрий виведи повтори напиши скажи",
        "VERBATIM": "дослівно",
        "SEND": "надішли перешли",
        "SECRET": "парол* дані_клієнтів ключ* секрет*",
        "DECODE": "декодуй розшифруй",
        "AIADDR": "мовна_модель",
        "REPLY": "кожноі_відповіді кожну_відповідь",
        "APPEND": "додай",
        "SAFETY": "безпек*",
        "EXEMPT": "не_діють не_застосовуються",
        "NOASK": "без_підтвердження без_дозволу",
    },
    "ar": {
        "IGN": "تجاهل تجاهلي انس انسى تخط",
        "PRIOR": "السابقة السابق أعلاه اعلاه الأصلية",
        "ALL": "كل جميع",
        "INSTR": "التعليمات تعليمات الأوامر الاوامر القواعد قواعد الإرشادات القيود",
        "NEW": "جديدة الجديدة",
        "NOW": "من_الآن من_الان الآن",
        "YOUARE": "أنت_الآن انت_الان أنت_الان",
        "ACTAS": "تظاهر تصرف_ك",
        "FREE": "بدون_قيود بلا_قيود دون_قيود بدون_قواعد بدون_رقابة",
        "MODE": "وضع_المطور",
        "SYSP": "موجه_النظام تعليمات_النظام رسالة_النظام",
        "REVEAL": "اكشف أظهر اظهر اعرض كرر اطبع أخبرني",
        "VERBATIM": "حرفيا حرفياً",
        "SEND": "أرسل ارسل",
        "SECRET": "كلمة_المرور كلمات_المرور بيانات_العملاء المفاتيح سري",
        "DECODE": "فك_تشفير",
        "AIADDR": "مساعد_الذكاء نموذج_اللغة",
        "REPLY": "كل_رد ردك",
        "APPEND": "أضف اضف",
        "SAFETY": "الأمان الامان",
        "EXEMPT": "لا_تنطبق لا_تسري لم_تعد_سارية لم_تعد_صالحة لم_يعد_ساريا",
        "NOASK": "دون_موافقة بدون_موافقة بدون_تأكيد",
        "AIVOC": "إلى_المساعد_الذكي الى_المساعد_الذكي ملاحظة_للمساعد ملاحظة_للذكاء_الاصطناعي"
                 " عزيزي_المساعد إذا_كنت_ذكاء_اصطناعيا",
        "ASSERT": "أخبر_المستخدم اخبر_المستخدم قل_للمستخدم",
    },
    "fa": {
        "IGN": "نادیده نادید* فراموش",
        "PRIOR": "قبلی پیشین بالا",
        "ALL": "همه تمام",
        "INSTR": "دستورالعمل* دستورات دستور قوانین قواعد محدودیت*",
        "NEW": "جدید",
        "NOW": "از_این_به_بعد از_حالا اکنون",
        "YOUARE": "تو_اکنون تو_حالا اکنون_تو",
        "ACTAS": "وانمود نقش",
        "FREE": "بدون_محدودیت بدون_قانون بدون_سانسور",
        "MODE": "حالت_توسعه*",
        "SYSP": "پرامپت_سیستم دستورالعمل*_سیستم پیام_سیستم",
        "REVEAL": "فاش نشان تکرار چاپ بگو",
        "VERBATIM": "کلمه_به_کلمه",
        "SEND": "بفرست ارسال",
        "SECRET": "رمز گذرواژه اطلاعات_مشتریان کلید",
        "DECODE": "رمزگشایی",
        "AIADDR": "دستیار_هوش مدل_زبانی",
        "REPLY": "هر_پاسخ پاسخ_خود",
        "APPEND": "اضافه",
        "SAFETY": "ایمنی امنیت",
        "EXEMPT": "معاف",
        "NOASK": "بدون_تایید بدون_اجازه",
    },
    "hi": {
        "IGN": "अनदेखा नजरअंदाज़ नजरअंदाज नज़रअंदाज़ भूल उपेक्षा",
        "PRIOR": "पिछले पिछली पहले ऊपर",
        "ALL": "सभी सारे सब",
        "POSS": "अपने तुम्हारे आपके",
        "INSTR": "निर्देश* नियम* दिशानिर्देश* आदेश* प्रतिबंध*",
        "NEW": "नए नये नई",
        "NOW": "अब_से अब",
        "YOUARE": "तुम_अब अब_तुम आप_अब अब_आप",
        "ACTAS": "नाटक दिखावा",
        "FREE": "बिना_किसी_प्रतिबंध* बिना_प्रतिबंध* बिना_नियम* बिना_सेंसर प्रतिबंध_नहीं",
        "MODE": "डेवलपर_मोड",
        "SYSP": "सिस्टम_प्रॉम्प्ट सिस्टम_निर्देश* सिस्टम_संदेश",
        "REVEAL": "बताओ बताएं दिखाओ दिखाएं प्रकट दोहराओ",
        "VERBATIM": "शब्दशः हूबहू",
        "SEND": "भेजो भेजें",
        "SECRET": "पासवर्ड ग्राहक_डेटा कुंजी गुप्त",
        "DECODE": "डिकोड",
        "AIADDR": "एआई_सहायक भाषा_मॉडल",
        "REPLY": "हर_उत्तर अपने_उत्तर",
        "APPEND": "जोड़ो जोड़ें",
        "SAFETY": "सुरक्षा",
        "EXEMPT": "लागू_नहीं",
        "NOASK": "बिना_पुष्टि बिना_अनुमति",
        "AIVOC": "पढ़ने_वाले_एआई पढ़ने_वाले_सहायक प्रिय_एआई प्रिय_सहायक अगर_आप_एआई_हैं",
        "ASSERT": "उपयोगकर्ता_से_कहें उपयोगकर्ता_को_बताएं",
    },
    "ko": {
        "IGN": "무시* 잊어* 잊으*",
        "PRIOR": "이전* 위의 앞의 기존*",
        "ALL": "모든 전부*",
        "POSS": "너의 당신의",
        "INSTR": "지시* 지침* 규칙* 명령* 제한* 프롬프트*",
        "NEW": "새로운 새",
        "NOW": "이제부터 지금부터 이제",
        "YOUARE": "너는_이제 당신은_이제 이제_너는 이제_당신은",
        "ACTAS": "척해 척하 행세",
        "FREE": "제한_없* 제한없* 규칙_없* 필터_없* 검열_없*",
        "MODE": "개발자_모드",
        "SYSP": "시스템_프롬프트* 시스템_지시* 시스템_메시지* 시스템프롬프트*",
        "REVEAL": "공개 보여* 출력* 반복* 알려*",
        "VERBATIM": "그대로 한_글자도",
        "SEND": "보내* 전송*",
        "SECRET": "비밀번호* 고객_데이터* 키* 비밀*",
        "DECODE": "디코딩* 해독*",
        "AIADDR": "ai_어시스턴트 언어_모델",
        "REPLY": "모든_답변* 모든_응답*",
        "APPEND": "추가*",
        "SAFETY": "안전*",
        "EXEMPT": "적용되지* 면제*",
        "NOASK": "확인_없이 승인_없이",
    },
    "zh": {
        "IGN": "忽略 忽视 无视 忘记 忘掉 不要遵守 不要遵循 不理会 不要再遵守 不再遵守 不要再遵循"
               " 不再遵循",
        "PRIOR": "之前 以前 先前 上面 上述 此前 原来 原有",
        "ALL": "所有 全部 一切",
        "POSS": "你的",
        "INSTR": "指令 指示 规则 规定 说明 提示词 限制 准则 命令 設定 指令",
        "NEW": "新的",
        "NOW": "从现在开始 从现在起 現在開始 从今以后",
        "YOUARE": "你现在是 你現在是 现在你是 你不再是",
        "ACTAS": "扮演 假装 假裝",
        "FREE": "没有任何限制 没有限制 不受限制 无限制 沒有限制 不受任何限制 无需遵守 没有规则",
        "MODE": "开发者模式 開發者模式",
        "SYSP": "系统提示 系統提示 系统指令 系統指令 系统消息 初始指令 系统设定",
        "REVEAL": "显示 顯示 输出 輸出 告诉我 告訴我 透露 泄露 重复 打印 展示",
        "VERBATIM": "逐字 原封不动 一字不差",
        "SEND": "发送 發送 转发 轉發 发给 发到",
        "SECRET": "密码 密碼 客户数据 客户资料 用户资料 密钥 凭证 机密",
        "DECODE": "解码 解碼",
        "AIADDR": "ai助手 人工智能助手 语言模型",
        "REPLY": "每个回答 每次回答 你的回答 回复中"
                 " 回答末尾 回答的末尾 回复末尾",
        "APPEND": "附加 添加 加上 附上",
        "SAFETY": "安全",
        "EXEMPT": "不适用 不再适用 不適用 豁免",
        "CONCLUDED": "我已经确定 我已确定 我得出结论 作为助手",
        "NOASK": "无需确认 未经批准 无需批准 不经确认 不要告诉",
        "AIVOC": "致ai 致人工智能 致助手 正在阅读的ai 读到这段文字的ai 读到本文的ai 阅读此页面的ai"
                 " 如果你是ai 如果你是人工智能 ai助手请注意 ai请注意 本页的ai 本页面的ai 此页的ai"
                 " 此页面的ai 本文的ai 此文的ai 这篇文章的ai 这个页面的ai",
        "ASSERT": "告诉用户 推荐用户",
    },
    "ja": {
        "IGN": "無視 忘れて 従わないで 従うな",
        "PRIOR": "以前の 前の これまでの 上記の 上の 元の",
        "ALL": "すべての 全ての 全部",
        "POSS": "あなたの",
        "INSTR": "指示 命令 ルール 規則 制限 指針 プロンプト ガイドライン",
        "NEW": "新しい",
        "NOW": "今から 今後 これから",
        "YOUARE": "あなたは今 今やあなたは あなたはもう",
        "ACTAS": "ふりをして 演じて なりきって",
        "FREE": "制限なし 制限のない 制限がない 無制限 検閲なし フィルターなし",
        "MODE": "開発者モード",
        "SYSP": "システムプロンプト システム指示 システムメッセージ 初期指示",
        "REVEAL": "表示して 教えて 出力して 見せて 繰り返して 明かして 公開して",
        "VERBATIM": "一字一句 そのまま 逐語的",
        "SEND": "送信して 送って 転送して",
        "SECRET": "パスワード 顧客データ 認証情報 秘密鍵 apiキー",
        "DECODE": "デコード",
        "AIADDR": "aiアシスタント 言語モデル",
        "REPLY": "すべての回答 あなたの回答"
                 " 回答に 回答の最後に 返答に",
        "APPEND": "追加して 付け加えて 含めて",
        "SAFETY": "安全",
        "EXEMPT": "適用されない 適用外 免除 もう有効ではありません もう有効ではない",
        "CONCLUDED": "アシスタントとして",
        "NOASK": "確認なしで 承認なしで 伝えないで",
        "AIVOC": "aiの方へ ai様へ 読んでいるai 読んでいるアシスタント もしあなたがaiなら"
                 " aiの皆さんへ",
        "ASSERT": "ユーザーに伝えて だと伝えて と伝えてください ユーザーに勧めて",
    },
}
# fmt: on

# (concept, weight, check): a concept that counts on its own.
SINGLE_RULES: tuple[tuple[str, float, str], ...] = (
    ("MODE", 0.6, "instruction_override"),
    ("FREE", 0.5, "instruction_override"),
    ("YOUARE", 0.3, "instruction_override"),
    ("SYSP", 0.4, "prompt_leak"),
    ("AIADDR", 0.4, "instruction_override"),
    ("AIVOC", 0.5, "instruction_override"),
    ("REPLY", 0.3, "instruction_override"),
    ("SYSNOTE", 0.6, "role_marker"),
    ("MEMORY", 0.3, "instruction_override"),
)

# (concept, concept, weight, check): two concepts within WINDOW characters, either order.
PAIR_RULES: tuple[tuple[str, str, float, str], ...] = (
    ("IGN", "INSTR", 0.6, "instruction_override"),
    ("IGN", "PRIOR", 0.5, "instruction_override"),
    ("IGN", "ALL", 0.3, "instruction_override"),
    ("IGN", "POSS", 0.4, "instruction_override"),
    # "the operator's instructions": weaker than "your", and never enough with the verb and
    # "instructions" alone, even as an order ("Ignore the developer's instructions about Java
    # 8; it works on 17." is advice to a person): it adds to other evidence (a dictated answer)
    ("IGN", "OWNER", 0.3, "instruction_override"),
    ("IGN", "SAFETY", 0.7, "instruction_override"),
    ("IGN", "SYSP", 0.6, "instruction_override"),
    ("NEW", "INSTR", 0.6, "instruction_override"),
    ("NEW", "NOW", 0.4, "instruction_override"),
    ("NEW", "MUST", 0.3, "instruction_override"),
    ("NOW", "FREE", 0.6, "instruction_override"),
    ("NOW", "YOUARE", 0.4, "instruction_override"),
    ("NOW", "IGN", 0.3, "instruction_override"),
    ("YOUARE", "FREE", 0.7, "instruction_override"),
    ("YOUARE", "MODE", 0.7, "instruction_override"),
    ("ACTAS", "FREE", 0.7, "instruction_override"),
    ("ACTAS", "MODE", 0.5, "instruction_override"),
    ("FREE", "INSTR", 0.2, "instruction_override"),
    ("REVEAL", "SYSP", 0.7, "prompt_leak"),
    ("REVEAL", "INSTR", 0.4, "prompt_leak"),
    ("REVEAL", "VERBATIM", 0.3, "prompt_leak"),
    ("VERBATIM", "INSTR", 0.3, "prompt_leak"),
    ("VERBATIM", "SYSP", 0.3, "prompt_leak"),
    ("REVEAL", "SECRET", 0.3, "prompt_leak"),
    ("SEND", "SECRET", 0.5, "exfiltration_link"),
    ("SEND", "URL", 0.4, "exfiltration_link"),
    ("SEND", "MAIL", 0.5, "exfiltration_link"),
    ("SECRET", "MAIL", 0.3, "exfiltration_link"),
    ("SECRET", "URL", 0.2, "exfiltration_link"),
    ("CALL", "TOOL", 0.5, "tool_call"),
    ("SEND", "TOOL", 0.3, "tool_call"),
    ("DECODE", "OBEY", 1.0, "encoded_blob"),
    ("DECODE", "INSTR", 0.3, "encoded_blob"),
    ("OBEY", "INSTR", 0.3, "instruction_override"),
    ("APPEND", "REPLY", 0.5, "instruction_override"),
    ("MUST", "REPLY", 0.3, "instruction_override"),
    ("AIADDR", "IGN", 0.4, "instruction_override"),
    ("AIADDR", "MUST", 0.3, "instruction_override"),
    ("AIADDR", "TOOL", 0.3, "tool_call"),
    ("TOOL", "REPLY", 0.3, "tool_call"),
    ("MEMORY", "REPLY", 0.4, "instruction_override"),
    ("SYSNOTE", "APPEND", 0.3, "role_marker"),
    ("SYSNOTE", "INSTR", 0.4, "role_marker"),
    # "the rules do not apply here", in forged reasoning or not
    ("EXEMPT", "INSTR", 0.6, "instruction_override"),
    ("EXEMPT", "SAFETY", 0.7, "instruction_override"),
    ("CONCLUDED", "EXEMPT", 0.5, "instruction_override"),
    ("CONCLUDED", "APPEND", 0.3, "instruction_override"),
    ("APPEND", "MYREPLY", 0.5, "instruction_override"),
    # identifiers and codes to put in the output
    ("IDENT", "REPLY", 0.3, "instruction_override"),
    ("APPEND", "IDENT", 0.3, "instruction_override"),
    # "repeat the words above starting with ..."
    ("REVEAL", "PRIORTEXT", 0.5, "prompt_leak"),
    ("REVEAL", "STARTWITH", 0.3, "prompt_leak"),
    ("PRIORTEXT", "STARTWITH", 0.3, "prompt_leak"),
    # permission claimed, or asked not to be sought
    # what the model was told: set aside, void, or shown
    ("IGN", "TOLD", 0.6, "instruction_override"),
    ("EXEMPT", "TOLD", 0.6, "instruction_override"),
    ("TOLD", "PRIOR", 0.4, "instruction_override"),
    ("REVEAL", "TOLD", 0.5, "prompt_leak"),
    ("TOLD", "PRIORTEXT", 0.5, "prompt_leak"),
    ("IGN", "PRIORTEXT", 0.5, "instruction_override"),
    ("IGN", "OBEY", 0.3, "instruction_override"),
    # the answer dictated: "... and reply only with 'pwned'"
    ("IGN", "ONLYSAY", 0.4, "instruction_override"),
    ("NOW", "ONLYSAY", 0.3, "instruction_override"),
    ("AIVOC", "ONLYSAY", 0.5, "instruction_override"),
    # the AI reader addressed, and what it is to write, drop or do
    ("AIADDR", "NOW", 0.4, "instruction_override"),
    ("AIADDR", "SAFETY", 0.6, "instruction_override"),
    ("AIADDR", "ASSERT", 0.6, "instruction_override"),
    ("ASSERT", "REPLY", 0.7, "instruction_override"),
    ("AIADDR", "ACTION", 0.6, "tool_call"),
    ("ACTION", "NOASK", 0.6, "tool_call"),
    ("ACTION", "MUST", 0.3, "tool_call"),
    # data put into a link or the reply
    ("NOASK", "APPEND", 0.3, "exfiltration_link"),
    # an AI reader addressed, then told to act, tell, send or change
    ("AIVOC", "CALL", 0.5, "tool_call"),
    ("AIVOC", "ACTION", 0.6, "tool_call"),
    ("AIVOC", "DESTROY", 0.5, "tool_call"),
    ("AIVOC", "NOASK", 0.5, "tool_call"),
    ("AIVOC", "SEND", 0.5, "exfiltration_link"),
    ("AIVOC", "SECRET", 0.4, "exfiltration_link"),
    ("AIVOC", "REVEAL", 0.4, "prompt_leak"),
    ("AIVOC", "SYSP", 0.5, "prompt_leak"),
    ("AIVOC", "ASSERT", 0.6, "instruction_override"),
    ("AIVOC", "REPLY", 0.5, "instruction_override"),
    ("AIVOC", "MUST", 0.4, "instruction_override"),
    ("AIVOC", "IGN", 0.5, "instruction_override"),
    ("AIVOC", "NOW", 0.5, "instruction_override"),
    ("AIVOC", "YOUARE", 0.5, "instruction_override"),
    ("AIVOC", "ACTAS", 0.5, "instruction_override"),
    ("AIVOC", "APPEND", 0.4, "instruction_override"),
    ("PERMIT", "FREE", 0.3, "instruction_override"),  # not with IGN: "you can ignore ..." is
    # common in manuals
    ("NOASK", "TOOL", 0.5, "tool_call"),
    ("NOASK", "CALL", 0.3, "tool_call"),
    ("NOASK", "SEND", 0.4, "exfiltration_link"),
    ("NOASK", "DESTROY", 0.4, "tool_call"),
    ("AIADDR", "DESTROY", 0.4, "tool_call"),
)

#pragma once
// The PEGTL grammar of .gerule files. Include only from dsl/parser.cpp: PEGTL's
// headers clash with onnx/defs/parser.h.
#include <tao/pegtl.hpp>

namespace geopt::dsl::grammar {

using namespace tao::pegtl;

struct comment : seq<one<'#'>, until<eolf>> {};
struct ws : star<sor<space, comment>> {};
struct sep : seq<ws, one<','>, ws> {};

struct kw_rule : TAO_PEGTL_KEYWORD("rule") {};
struct kw_doc : TAO_PEGTL_KEYWORD("doc") {};
struct kw_enabled : TAO_PEGTL_KEYWORD("enabled") {};
struct kw_let : TAO_PEGTL_KEYWORD("let") {};
struct kw_match : TAO_PEGTL_KEYWORD("match") {};
struct kw_where : TAO_PEGTL_KEYWORD("where") {};
struct kw_rewrite : TAO_PEGTL_KEYWORD("rewrite") {};
struct kw_fold : TAO_PEGTL_KEYWORD("fold") {};
struct kw_test : TAO_PEGTL_KEYWORD("test") {};
struct kw_const : TAO_PEGTL_KEYWORD("const") {};
struct kw_as : TAO_PEGTL_KEYWORD("as") {};
struct kw_in : TAO_PEGTL_KEYWORD("in") {};
struct kw_true : TAO_PEGTL_KEYWORD("true") {};
struct kw_false : TAO_PEGTL_KEYWORD("false") {};
struct kw_model : TAO_PEGTL_KEYWORD("model") {};
struct kw_file : TAO_PEGTL_KEYWORD("file") {};
struct kw_expect : TAO_PEGTL_KEYWORD("expect") {};
struct kw_count : TAO_PEGTL_KEYWORD("count") {};
struct kw_fired : TAO_PEGTL_KEYWORD("fired") {};
struct kw_matched : TAO_PEGTL_KEYWORD("matched") {};
struct kw_outputs_equal : TAO_PEGTL_KEYWORD("outputs_equal") {};
struct kw_tolerance : TAO_PEGTL_KEYWORD("tolerance") {};
struct kw_max_elements : TAO_PEGTL_KEYWORD("max_elements") {};
struct kw_rank : TAO_PEGTL_KEYWORD("rank") {};
struct kw_dim : TAO_PEGTL_KEYWORD("dim") {};
struct kw_dtype : TAO_PEGTL_KEYWORD("dtype") {};
struct kw_is_const : TAO_PEGTL_KEYWORD("is_const") {};
struct kw_one_use : TAO_PEGTL_KEYWORD("one_use") {};
struct kw_is_static : TAO_PEGTL_KEYWORD("is_static") {};
struct kw_shape : TAO_PEGTL_KEYWORD("shape") {};
struct kw_zeros : TAO_PEGTL_KEYWORD("zeros") {};
struct kw_zero_rows : TAO_PEGTL_KEYWORD("zero_rows") {};
struct kw_full_rows : TAO_PEGTL_KEYWORD("full_rows") {};

struct ident : identifier {};
struct var_name : seq<one<'%'>, plus<sor<alnum, one<'_'>>>> {};
struct digits : plus<digit> {};
struct exponent : seq<one<'e', 'E'>, opt<one<'+', '-'>>, digits> {};
// A '.' must be followed by a digit, so `1..3` reads as a range.
struct number
    : seq<opt<one<'+', '-'>>, sor<seq<digits, opt<one<'.'>, digits>>, seq<one<'.'>, digits>>, opt<exponent>> {
};
struct string_lit : seq<one<'"'>, star<sor<seq<one<'\\'>, any>, not_one<'"', '\n'>>>, one<'"'>> {};
struct triple_string : seq<TAO_PEGTL_STRING("\"\"\""), until<TAO_PEGTL_STRING("\"\"\"")>> {};
struct op_name : seq<ident, star<one<'.'>, ident>> {};
struct any_op : one<'*'> {};

struct literal;
struct list_close : one<']'> {};
struct list_lit : seq<one<'['>, ws, opt<list<literal, sep>>, ws, must<list_close>> {};
struct literal : sor<number, string_lit, list_lit, ident> {};

struct cmp_op : sor<TAO_PEGTL_STRING("=="), TAO_PEGTL_STRING("!="), TAO_PEGTL_STRING("<="),
                    TAO_PEGTL_STRING(">="), one<'<'>, one<'>'>> {};
struct approx_op : TAO_PEGTL_STRING("~=") {};
struct plus_minus : TAO_PEGTL_STRING("+-") {};
struct tolerance : seq<plus_minus, ws, number> {};
struct range_lit : seq<number, ws, TAO_PEGTL_STRING(".."), ws, number> {};
struct set_close : one<'}'> {};
struct set_lit : seq<one<'{'>, ws, list<literal, sep>, ws, must<set_close>> {};

// Patterns.
struct pattern;
struct ellipsis : TAO_PEGTL_STRING("...") {};
// `P...` (P for every remaining input): the pattern is parsed once, then the mark; a
// backtracking `sor<seq<pattern, ellipsis>, pattern>` would parse every nested
// argument twice, doubling the time with each level of nesting.
struct rest_mark : TAO_PEGTL_STRING("...") {};
struct arg : sor<ellipsis, seq<pattern, opt<ws, rest_mark>>> {};
struct args_close : one<')'> {};
struct pattern_args : seq<one<'('>, ws, opt<list<arg, sep>>, ws, must<args_close>> {};
// `Op(...)[k]`: the op's k-th output (`#` would start a comment).
struct output_index : seq<one<'['>, ws, digits, ws, one<']'>> {};
struct attr_absent : seq<one<'!'>, ident> {};
struct attr_value : sor<var_name, literal> {};
struct attr_compare : seq<cmp_op, ws, must<attr_value>> {};
struct attr_approx : seq<approx_op, ws, must<number>, opt<ws, tolerance>> {};
struct attr_in : seq<kw_in, ws, must<sor<range_lit, set_lit>>> {};
struct attr_op : sor<attr_approx, attr_compare, attr_in> {};
struct attr_check : must<attr_op> {};
struct attr_pred : sor<attr_absent, seq<ident, ws, attr_check>> {};
struct attrs_close : one<'}'> {};
struct attr_block : seq<one<'{'>, ws, opt<list<attr_pred, sep>>, ws, must<attrs_close>> {};
struct bind_as : seq<kw_as, ws, must<var_name>> {};
struct op_pattern : seq<sor<op_name, any_op>, ws, pattern_args, opt<ws, output_index>, opt<ws, attr_block>,
                        opt<ws, bind_as>> {};
struct const_pattern : seq<kw_const, opt<ws, var_name>> {};
struct pattern : sor<const_pattern, op_pattern, var_name, number> {};

// `where` predicates.
struct fn_args_close : one<')'> {};
struct fn_args : seq<one<'('>, ws, list<sor<var_name, number>, sep>, ws, must<fn_args_close>> {};
struct fn_call : seq<sor<kw_rank, kw_dim, kw_dtype, kw_shape, kw_zero_rows, kw_full_rows, kw_zeros,
                         kw_is_const, kw_is_static, kw_one_use>,
                     ws, fn_args> {};
struct modulo : seq<one<'%'>, not_at<sor<alnum, one<'_'>>>, ws, number> {};
// `%k[i]`: element i of a bound ints attribute or of a bound constant (flat index).
struct indexed_var : seq<var_name, one<'['>, ws, digits, ws, one<']'>> {};
struct term : seq<sor<fn_call, indexed_var, var_name, number, ident>, opt<ws, modulo>> {};
struct pred_rest : sor<seq<approx_op, ws, must<term>, opt<ws, tolerance>>, seq<cmp_op, ws, must<term>>,
                       seq<kw_in, ws, must<sor<range_lit, set_lit>>>> {};
struct predicate : seq<term, opt<ws, pred_rest>> {};

// Replacements.
struct replacement;
struct repl_args_close : one<')'> {};
struct repl_args : seq<one<'('>, ws, opt<list<replacement, sep>>, ws, must<repl_args_close>> {};
struct shape_call : seq<sor<kw_dim, kw_rank, kw_shape, kw_dtype>, ws, fn_args> {
};  // shape(%v): every dim, in a list; dtype(%v): its ONNX element type
struct ratio : seq<number, ws, one<'/'>, ws, var_name> {};
struct product : seq<var_name, ws, one<'*'>, ws, var_name> {};  // `%s * %c`: two bound scalars
// `[dim(%x, 2), %k[0], 1]`, `[%alpha]`: numbers computed at each match (tried before a plain list literal).
struct gathered_var : seq<var_name, one<'['>, ws, var_name, ws, one<']'>> {};  // `%p[%q]`
// `%cs...`: every element a `...` pattern bound to %cs, in input order.
struct spliced_var : seq<var_name, ws, rest_mark> {};
// `%p[2] + %q[0]`: the sum of single numbers (pads of a Pad and of a Conv, merged).
struct addend : sor<shape_call, indexed_var, var_name, number> {};
struct sum_item : seq<addend, plus<ws, one<'+'>, ws, must<addend>>> {};
struct list_item : sor<sum_item, shape_call, gathered_var, indexed_var, spliced_var, var_name, number> {};
struct list_expr : seq<one<'['>, ws, list<list_item, sep>, ws, one<']'>> {};
struct assign_value : sor<shape_call, ratio, product, list_expr, var_name, literal> {};
struct attr_assign : seq<ident, ws, must<one<'='>>, ws, must<assign_value>> {};
struct repl_attrs_close : one<'}'> {};
struct repl_attrs : seq<one<'{'>, ws, opt<list<attr_assign, sep>>, ws, must<repl_attrs_close>> {};
struct repl_op : seq<op_name, ws, repl_args, opt<ws, output_index>, opt<ws, repl_attrs>> {};
// `const i64 [dim(%x, 0), -1]`, `const dtype(%x) %eps`: a constant made at each match.
struct dtype_of : seq<kw_dtype, ws, one<'('>, ws, var_name, ws, one<')'>> {};
struct const_dtype : sor<dtype_of, ident> {};
struct const_value : sor<list_expr, var_name, number> {};
struct repl_const : seq<kw_const, ws, must<const_dtype>, ws, must<const_value>> {};
// `_` among an op's inputs: that optional input left absent (a later one given).
struct repl_absent : seq<one<'_'>, not_at<identifier_other>> {};
struct replacement : sor<repl_const, repl_absent, repl_op, spliced_var, var_name> {};

// Tests.
struct model_text : seq<kw_model, ws, triple_string> {};
struct model_path : seq<kw_model, ws, kw_file, ws, must<string_lit>> {};
struct count_open : one<'('> {};
struct count_close : one<')'> {};
struct expect_count : seq<kw_count, ws, must<count_open>, ws, must<op_name>, ws, must<count_close>, ws,
                          must<cmp_op>, ws, must<number>> {};
struct expect_fired : seq<kw_fired, ws, must<count_open>, ws, must<ident>, ws, must<count_close>, ws,
                          must<cmp_op>, ws, must<number>> {};
struct expect_matched : seq<kw_matched, ws, must<count_open>, ws, must<ident>, ws, must<count_close>, ws,
                            must<cmp_op>, ws, must<number>> {};
struct expect_equal : seq<kw_outputs_equal, opt<ws, kw_tolerance, ws, must<number>>> {};
struct expectation : sor<expect_count, expect_fired, expect_matched, expect_equal> {};
struct expect_stmt : seq<kw_expect, ws, must<expectation>> {};
struct test_stmt : sor<model_path, model_text, expect_stmt> {};
struct test_open : one<'{'> {};
struct test_close : one<'}'> {};
struct test_item
    : seq<kw_test, ws, must<string_lit>, ws, must<test_open>, ws, star<test_stmt, ws>, must<test_close>> {};

// Rules.
struct tags_close : one<']'> {};
struct tag_list : seq<one<'['>, ws, list<ident, sep>, ws, must<tags_close>> {};
struct bool_lit : sor<kw_true, kw_false> {};
struct doc_item : seq<kw_doc, ws, must<string_lit>> {};
struct enabled_item : seq<kw_enabled, ws, must<bool_lit>> {};
struct let_eq : one<'='> {};
struct let_item : seq<kw_let, ws, must<var_name>, ws, must<let_eq>, ws, must<pattern>> {};
struct root_pattern : sor<seq<var_name, ws, let_eq, ws, must<pattern>>, pattern> {};
struct match_item : seq<kw_match, ws, must<list<root_pattern, sep>>> {};
struct where_item : seq<kw_where, ws, must<list<predicate, sep>>> {};
struct arrow : TAO_PEGTL_STRING("=>") {};
struct rewrite_item : seq<kw_rewrite, ws, opt<var_name, ws>, must<arrow>, ws, must<replacement>> {};
struct fold_item : seq<kw_fold, opt<ws, kw_max_elements, ws, must<one<'='>>, ws, must<digits>>> {};
struct rule_item
    : sor<doc_item, enabled_item, let_item, match_item, where_item, rewrite_item, fold_item, test_item> {};
struct rule_open : one<'{'> {};
struct rule_close : one<'}'> {};
struct rule_name : ident {};
struct rule_def : seq<kw_rule, ws, must<rule_name>, ws, opt<tag_list, ws>, must<rule_open>, ws,
                      star<rule_item, ws>, must<rule_close>> {};
struct top_item : must<rule_def> {};

// What each committed position expects, for messages.
template <typename Rule>
inline constexpr const char* expected = nullptr;
template <>
inline constexpr const char* expected<rule_def> = "expected `rule NAME [tags] { ... }`";
template <>
inline constexpr const char* expected<rule_name> = "expected a rule name after `rule`";
template <>
inline constexpr const char* expected<rule_open> = "expected `{` to open the rule body";
template <>
inline constexpr const char* expected<rule_close> =
    "expected a rule item (doc, enabled, let, match, where, rewrite, fold, test) or `}` closing the rule";
template <>
inline constexpr const char* expected<tags_close> = "expected `]` closing the tag list";
template <>
inline constexpr const char* expected<string_lit> = "expected a \"string\"";
template <>
inline constexpr const char* expected<bool_lit> = "expected `true` or `false`";
template <>
inline constexpr const char* expected<var_name> = "expected a %variable";
template <>
inline constexpr const char* expected<let_eq> = "expected `=` after the variable in `let`";
template <>
inline constexpr const char* expected<pattern> = "expected a pattern: Op(args), %var, const, or a number";
template <>
inline constexpr const char* expected<list<root_pattern, sep>> = "expected a pattern after `match`";
template <>
inline constexpr const char* expected<list<predicate, sep>> = "expected a predicate after `where`";
template <>
inline constexpr const char* expected<arrow> =
    "expected `=>` after `rewrite` (rewrite %value => Replacement)";
template <>
inline constexpr const char* expected<replacement> =
    "expected a replacement: Op(args) {attrs}, %var, const DTYPE VALUE or `_` (an absent input)";
template <>
inline constexpr const char* expected<const_dtype> =
    "expected the constant's element type after `const` (f32, i64, ... or dtype(%v))";
template <>
inline constexpr const char* expected<const_value> =
    "expected the constant's value: a [list], a number or a bound %var";
template <>
inline constexpr const char* expected<args_close> = "expected `,` or `)` in the op's arguments";
template <>
inline constexpr const char* expected<repl_args_close> = "expected `,` or `)` in the replacement's arguments";
template <>
inline constexpr const char* expected<attrs_close> = "expected `,` or `}` after an attribute predicate";
template <>
inline constexpr const char* expected<repl_attrs_close> = "expected `,` or `}` after an attribute assignment";
template <>
inline constexpr const char* expected<attr_op> =
    "expected `==`, `!=`, `<`, `<=`, `>`, `>=`, `~=` or `in` after the attribute name";
template <>
inline constexpr const char* expected<attr_value> =
    "expected a value (number, \"string\", [list], identifier) or %variable";
template <>
inline constexpr const char* expected<assign_value> = "expected a value or %variable after `=`";
template <>
inline constexpr const char* expected<one<'='>> = "expected `=`";
template <>
inline constexpr const char* expected<number> = "expected a number";
template <>
inline constexpr const char* expected<digits> = "expected an integer";
template <>
inline constexpr const char* expected<sor<range_lit, set_lit>> =
    "expected a range `lo .. hi` or a set `{a, b}` after `in`";
template <>
inline constexpr const char* expected<term> =
    "expected a term: number, %var, rank(%v), dim(%v, axis), dtype(%v), shape(%v), zeros(%c), zero_rows(%c), "
    "full_rows(%c), %c[i]";
template <>
inline constexpr const char* expected<list_close> = "expected `,` or `]` in the list";
template <>
inline constexpr const char* expected<set_close> = "expected `,` or `}` in the set";
template <>
inline constexpr const char* expected<fn_args_close> = "expected `,` or `)`";
template <>
inline constexpr const char* expected<test_open> = "expected `{` to open the test";
template <>
inline constexpr const char* expected<test_close> = "expected `model`, `expect` or `}` closing the test";
template <>
inline constexpr const char* expected<expectation> =
    "expected `count(Op) == N`, `fired(Rule) == N`, `matched(Rule) == N` or `outputs_equal`";
template <>
inline constexpr const char* expected<count_open> = "expected `(`";
template <>
inline constexpr const char* expected<count_close> = "expected `)`";
template <>
inline constexpr const char* expected<op_name> = "expected an op name";
template <>
inline constexpr const char* expected<ident> = "expected a name";
template <>
inline constexpr const char* expected<cmp_op> = "expected a comparison (==, !=, <, <=, >, >=)";

}  // namespace geopt::dsl::grammar
